// `zerotrain tokenize --tokenizer DIR|FILE INPUT... -o OUT.bin [--val N%] [--chat-format F]`
// (lib/tokenize/tokenize_files.hpp does the work).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <memory>

#include "cli_options.hpp"
#include "subcommand.hpp"
#include "tokenize/tokenize_files.hpp"

namespace zt::cli {

Subcommand tokenize_subcommand(CLI::App& app) {
  auto [command, options] = add_command<TokenizeOptions>(
      app, "tokenize", "text, JSON Lines and chat data to llm.c token files (docs/data.md)", R"(Each text file is one document; each record of a .jsonl file (or of a .json array) is one:
{"text": ...} is text; {"messages": [{"role", "content"}...]}, {"conversations": [{"from", "value"}...]}
(ShareGPT) and {"instruction", "input", "output"} (Alpaca) are conversations, rendered in the model's
chat format with the loss on the answers only (OUT.mask beside OUT.bin); they train as samples
(OUT.idx: where each starts). --val N% moves a seeded sample of N% of the documents, whole, to
OUT.val.bin (one text file, with no documents to sample: its last N% of tokens).

Examples:
  zerotrain tokenize --tokenizer gpt2/ corpus.txt -o corpus.bin --val 5%
  zerotrain tokenize --tokenizer Qwen3-0.6B/ chats.jsonl -o chats.bin
)");
  command->add_option("--tokenizer", options->tokenizer,
                      "a directory with tokenizer.json (or vocab.json + merges.txt), or one of those files")
      ->required();
  command->add_option("INPUT", options->inputs, "text, .jsonl or .json files")->required();
  command->add_option("-o,--output", options->output, "the token file to write (OUT.bin)")->required();
  command->add_option("--val", options->val, "N%: a seeded sample of N% of the documents (records) go to OUT.val.bin");
  command->add_option("--seed", options->seed, "which documents --val takes")->capture_default_str();
  command->add_option("--chat-format", options->chat_format,
                      "chatml, qwen3 or llama3 (default: told by the tokenizer's special tokens)");
  command->add_option("--threads", options->threads, "worker threads (default: one per core)");
  command->add_flag("--quiet", options->quiet, "no progress, no summary");
  return {command, [o = options](int, char**) { return exit_status("tokenize", [&] { run_tokenize(*o); }); }};
}

}  // namespace zt::cli
