// `zerotrain tokenize --tokenizer DIR|FILE INPUT... -o OUT.bin [--val N%] [--chat-format F] [--system TEXT]
// [--train-on all|last] [--skip-invalid]`
// (lib/tokenize/tokenize_files.hpp does the work).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <memory>

#include "cli_options.hpp"
#include "subcommand.hpp"
#include "tokenize/tokenize_files.hpp"
#include "tokenizer/chat_format.hpp"

namespace zt::cli {

Subcommand tokenize_subcommand(CLI::App& app) {
  auto [command, options] = add_command<TokenizeOptions>(
      app, "tokenize", "text, JSON Lines and chat data to llm.c token files (docs/data.md)",
      R"(Each text file is one document; each record of a .jsonl file (or of a .json array) is one:
{"text": ...} is text; {"messages": [{"role", "content"}...]} (tool calls and results included),
{"conversations": [{"from", "value"}...]} (ShareGPT) and {"instruction", "input", "output"} (Alpaca)
are conversations, rendered in the model's chat format (its chat template's) with the loss on the
answers only (OUT.mask beside OUT.bin); {"prompt", "completion"} trains on the completion;
{"input_ids", "labels"} are tokens already made (labels -100: not counted). Records train as samples
(OUT.idx: where each starts). Preference pairs, {"prompt", "chosen", "rejected"} (texts or messages;
without "prompt": the start chosen and rejected share), LLaMA-Factory's {"instruction" or
"conversations", "chosen", "rejected"} and ms-swift's {"messages", "rejected_response" or "rejected_messages"}, are two
samples each, prompt + chosen then prompt + rejected, with TRL's DPOTrainer's ids and the loss on the
answers (OUT.idx an index of pairs); a file holds one form, and pairs no other data. --val N% moves a seeded )"
    R"(sample of N% of the documents, whole, to
OUT.val.bin (one text file, with no documents to sample: its last N% of tokens).

Examples:
  zerotrain tokenize --tokenizer gpt2/ corpus.txt -o corpus.bin --val 5%
  zerotrain tokenize --tokenizer Qwen3-0.6B/ chats.jsonl -o chats.bin
  zerotrain tokenize --tokenizer Qwen2.5-0.5B-Instruct/ chats.jsonl -o chats.bin --system "You are terse." \
      --train-on last --skip-invalid
  zerotrain tokenize --tokenizer Qwen3-0.6B/ preferences.jsonl -o prefs.bin --val 5%
)");
  command->add_option("--tokenizer", options->tokenizer,
                      "a directory with tokenizer.json (or vocab.json + merges.txt), or one of those files")
      ->required();
  command->add_option("INPUT", options->inputs, "text, .jsonl or .json files")->required();
  command->add_option("-o,--output", options->output, "the token file to write (OUT.bin)")->required();
  command->add_option("--val", options->val, "N%: a seeded sample of N% of the documents (records) go to OUT.val.bin");
  command->add_option("--seed", options->seed, "which documents --val takes")->capture_default_str();
  command->add_option(
      "--chat-format", options->chat_format,
      kChatFormatNames.list(",") + " (default: told by the tokenizer's chat template, else its special tokens)");
  command->add_option("--system", options->system,
                      "the system message of the conversations that have none (it replaces a template's default one)");
  command->add_option("--train-on", options->train_on,
                      "which assistant answers count where a message's \"loss\" flag does not say: all or last")
      ->capture_default_str();
  command->add_flag("--skip-invalid", options->skip_invalid,
                    "leave out records that cannot be read or rendered, and count them (default: refuse with the file "
                    "and line)");
  command->add_option("--threads", options->threads, "worker threads (default: one per core)");
  command->add_flag("--quiet", options->quiet, "no progress, no summary");
  return {command, [o = options](int, char**) { return exit_status("tokenize", [&] { run_tokenize(*o); }, true); }};
}

}  // namespace zt::cli
