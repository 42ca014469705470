// `zerotrain generate --model DIR|CHECKPOINT --prompt TEXT ...`: a trained model continues a prompt.
#include <cstdio>
#include <memory>

#include "cli_options.hpp"
#include "inference/generate_text.hpp"
#include "tokenizer/chat_format.hpp"
#include "subcommand.hpp"

namespace zt::cli {

namespace {

const char* const kGenerateFooter =
    R"(--model: a checkpoint (training.checkpoint_dir, or one step directory in it), or a Hugging Face
model directory of any family zerotrain trains (GPT-2, Llama, Mistral, Qwen2, Qwen3, Gemma 2, Gemma 3,
Qwen3-MoE, Qwen2-MoE, Mixtral, OLMoE: config.json and model.safetensors or its shards, as transformers, training.save_final and zerotrain export write
them), or a PEFT adapter directory (a LoRA run's training.save_final or --output_dir: its adapters
merged into the base model its adapter_config.json names). --tokenizer: the tokenizer the training
data was made with (default: the one in the model directory, or for a checkpoint the one its data's
token files recorded, training.sample_tokenizer, or the run's model directory's; a model of 256
tokens reads bytes); another tokenizer than the one the model's ids are known to mean is refused
unless --tokenizer-mismatch warn.
The prompt starts a document as `zerotrain tokenize` starts one (after the tokenizer's separator);
generation ends at an end-of-text or end-of-turn token, at --max-new-tokens, or when the model's
positions are used up. Temperature 0 is greedy decoding. With --chat the prompt is a user's turn in
the model's chat format (its tokenizer's chat template, as apply_chat_template with
add_generation_prompt writes it; --system before it), and what is printed is the answer.

Examples:
  zerotrain generate --model checkpoints --prompt "And God said"
  zerotrain generate --model hf_model --prompt "Once upon a time" --temperature 0.8 --top-k 40
  zerotrain generate --model Qwen2.5-0.5B-Instruct --chat --system "Answer in French." --prompt "Hello!"
)";

}  // namespace

Subcommand generate_subcommand(CLI::App& app) {
  auto [cmd, o] = add_command<GenerateOptions>(
      app, "generate", "a trained model continues a prompt, streaming its text (docs/data.md)", kGenerateFooter);
  add_model_options(*cmd, o->model, o->device, o->dtype);
  cmd->add_option("--tokenizer", o->tokenizer,
                  "a directory with tokenizer.json (or vocab.json + merges.txt), or one of those files");
  add_tokenizer_mismatch_option(*cmd, o->tokenizer_mismatch);
  cmd->add_option("--prompt", o->prompt, "the text to continue (with --chat: the user's message)")->required();
  cmd->add_flag("--chat", o->chat, "the prompt is a user's turn in the model's chat format; print the answer");
  cmd->add_option("--system", o->system, "with --chat: the system message (it replaces a template's default one)");
  cmd->add_option("--chat-format", o->chat_format,
                  "with --chat: " + kChatFormatNames.list(",") + " (default: told by the tokenizer's chat template)");
  cmd->add_option("--max-new-tokens", o->max_new_tokens, "tokens to generate at most")->capture_default_str();
  cmd->add_option("--temperature", o->sampling.temperature, "softmax temperature; 0: greedy")->capture_default_str();
  cmd->add_option("--top-k", o->sampling.top_k, "draw among the K most likely tokens; 0: all")->capture_default_str();
  cmd->add_option("--top-p", o->sampling.top_p,
                  "draw among the fewest most likely tokens whose probabilities reach P; 1: all")
      ->capture_default_str();
  cmd->add_option("--seed", o->sampling.seed, "seed of the draws (the same seed, the same text)")
      ->capture_default_str();
  cmd->add_flag("--dry-run,--dry_run", o->dry_run,
                "print the memory generation would hold (weights, KV cache per layer kind, activations) and exit");
  return {cmd, [o = o](int, char**) {
            init_logging(log_options(0, "info"));  // warnings go to stderr, the text to stdout
            return exit_status("generate", [&] { run_generate(*o, stdout); });
          }};
}

}  // namespace zt::cli
