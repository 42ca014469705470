// `zerotrain eval --model DIR|CHECKPOINT --data FILE`: the loss and perplexity of a trained model.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

#include "cli_options.hpp"
#include "comm/world.hpp"
#include "core/exit_status.hpp"
#include "inference/evaluation.hpp"
#include "subcommand.hpp"

namespace zt::cli {

namespace {

const char* const kEvalFooter = R"(--model: a checkpoint, a Hugging Face model directory of any family zerotrain trains
(GPT-2, Llama, Mistral, Qwen2, Qwen3, Gemma 2, Gemma 3, Qwen3-MoE, Qwen2-MoE, Mixtral, OLMoE) or a
PEFT adapter directory on its base model, as for generate.
--data: a token file as training reads it
(data.format auto: llm.c .bin with its loss mask when one lies beside it, .u16, text as bytes). The
file is cut into windows of B x T + 1 tokens as training cuts it, read in order; record data (a
sample index beside it: conversations) is read as rows of whole samples (--packing none: one per
row, pack: several; a sample longer than T cut or left out as --truncation says). Several ranks
(scripts/launch.sh -n N) share the micro-batches and give the same loss up to the order of the sums.
--dtype auto (the default) rounds the weights as the run that trained them did, so a checkpoint
evaluates to the run's own val loss. A token file whose record names another tokenizer than the
model's (its directory's tokenizer files, or the tokenizer of a checkpoint's data) is refused unless
--tokenizer-mismatch warn.

Examples:
  zerotrain eval --model checkpoints --data data/tinytext/val.txt
  scripts/launch.sh -n 4 -- build/zerotrain eval --model hf_model --data val.bin --seq-len 1024
)";

int eval(const EvalOptions& o, int argc, char** argv) {
  World world(argc, argv);
  init_logging(log_options(world.rank(), "info"));  // warnings go to stderr, the result to stdout
  EvalResult r;
  const auto start = std::chrono::steady_clock::now();
  try {
    r = evaluate_file(o, world);
  } catch (const std::exception& e) {
    if (*e.what()) std::fprintf(stderr, "error: eval: %s\n", e.what());  // the lowest failing rank speaks for all
    return kExitFailed;
  }
  if (world.rank() != 0) return 0;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string read =
      r.samples.empty() ? fmt::format("{} windows of {} x {} tokens", r.windows, r.batch_size, r.seq_len)
                        : fmt::format("{} micro-batches of {} rows: {}", r.windows, r.batch_size, r.samples);
  std::printf(
      "eval: %s: loss %.6f, perplexity %.3f, over %lld targets that count of %lld (%s) on %d rank%s in %.1f s\n",
      o.data.c_str(), r.loss, std::exp(r.loss), static_cast<long long>(r.counted), static_cast<long long>(r.targets),
      read.c_str(), world.size(), world.size() == 1 ? "" : "s", seconds);
  return 0;
}

}  // namespace

Subcommand eval_subcommand(CLI::App& app) {
  auto [cmd, o] = add_command<EvalOptions>(
      app, "eval", "the loss and perplexity of a trained model over a token file (docs/data.md)", kEvalFooter);
  add_model_options(*cmd, o->model, o->device, o->dtype);
  cmd->add_option("--data", o->data, "the token file")->required();
  cmd->add_option("--format", o->format, "auto, llmc, uint16 or text (data.format)")->capture_default_str();
  cmd->add_option("--seq-len", o->seq_len,
                  "tokens per sequence (default: the model's positions, at most 1024 and what the file holds)");
  cmd->add_option("--batch-size", o->batch_size, "sequences per forward")->capture_default_str();
  cmd->add_option("--max-windows", o->max_windows, "evaluate the first N windows (micro-batches) only (0: all)")
      ->capture_default_str();
  cmd->add_option("--packing", o->packing, "record data: none (a sample per row), pack or windows (data.packing)")
      ->check(CLI::IsMember(kPackingNames.names()))
      ->capture_default_str();
  cmd->add_option("--truncation", o->truncation, "record data: a sample longer than T, truncate or drop")
      ->check(CLI::IsMember(kTruncationNames.names()))
      ->capture_default_str();
  add_tokenizer_mismatch_option(*cmd, o->tokenizer_mismatch);
  return {cmd, [o = o](int argc, char** argv) { return eval(*o, argc, argv); }};
}

}  // namespace zt::cli
