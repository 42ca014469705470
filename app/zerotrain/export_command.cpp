// `zerotrain export CHECKPOINT_DIR -o OUT_DIR`: a checkpoint as a Hugging Face model directory.
#include <spdlog/spdlog.h>

#include <cstdio>
#include <memory>
#include <optional>

#include "cli_options.hpp"
#include "core/dtype.hpp"
#include "hf/hf_dir.hpp"
#include "subcommand.hpp"
#include "train/model_export.hpp"

namespace zt::cli {

namespace {

const char* const kExportExamples =
    R"(CHECKPOINT_DIR is training.checkpoint_dir (the checkpoint its `latest` file names) or one step
directory in it, saved at any ZeRO stage by any number of ranks. Writes OUT_DIR as transformers'
save_pretrained does for the model's family (gpt2, llama, mistral, qwen2, qwen3): config.json,
model.safetensors under Hugging Face names (or model-00001-of-0000N.safetensors and
model.safetensors.index.json above --max-shard-size), and the tokenizer files of the model
directory the run started from, or of the tokenizer the run's data was made with when there is no
such directory (docs/data.md); the same files training.save_final writes for the same state, one
parameter group at a time. OUT_DIR is written whole beside its place and swapped in: an interrupted
export leaves the old one as it was. It may not be, or hold, the checkpoint or the model directory
the run started from (--overwrite for a user who means to replace that model). bf16 holds the master
weights rounded to nearest even: exactly what a
bf16 run computed with.

A LoRA run's checkpoint gives its adapters as a PEFT adapter directory (adapter_config.json,
adapter_model.safetensors: PeftModel.from_pretrained loads it on the base model), or with --merge
the merged model. Frozen weights (the base model of a LoRA run, training.freeze) are read again
from the run's training.init_from: a checkpoint holds what trained.

CHECKPOINT_DIR may also be a PEFT adapter directory (a LoRA run's training.save_final or
--output_dir): on the base model its adapter_config.json names (base_model_name_or_path, which must
still be there as the adapter was saved), it gives the adapter directory again in --dtype, or with
--merge the merged model.

Examples:
  zerotrain export checkpoints -o hf_model
  zerotrain export checkpoints/step_00001000 -o hf_model --dtype bf16 --max-shard-size 2GB
  zerotrain export lora_checkpoints -o merged_model --merge
  zerotrain export lora_output_dir -o merged_model --merge
)";

struct ExportArgs {
  std::string checkpoint_dir, out_dir, dtype = "fp32", max_shard_size = "5GB";
  bool merge = false;
  bool overwrite = false;
  std::string tokenizer_mismatch;  // "": the run's data.tokenizer_mismatch
};

// One process, no MPI: reads the shard files and writes the consolidated weights.
void export_model(const ExportArgs& a) {
  init_logging(log_options(0, "info"));
  HfOutput output(dtype_from_name(a.dtype));
  output.max_shard_bytes = parse_byte_size(a.max_shard_size, "--max-shard-size");
  std::optional<TokenizerMismatch> tokenizer_mismatch;
  if (!a.tokenizer_mismatch.empty())
    tokenizer_mismatch = kTokenizerMismatchNames.parse(a.tokenizer_mismatch, "--tokenizer-mismatch");
  if (classify_path(a.checkpoint_dir) == PathKind::Adapter)
    export_adapter(a.checkpoint_dir, a.out_dir, output, a.merge, a.overwrite);
  else
    export_checkpoint(a.checkpoint_dir, a.out_dir, output, a.merge, tokenizer_mismatch, a.overwrite);
  spdlog::info("exported {} to {} ({})", a.checkpoint_dir, a.out_dir, a.dtype);
}

}  // namespace

Subcommand export_subcommand(CLI::App& app) {
  auto [exp, a] = add_command<ExportArgs>(app, "export",
                                          "consolidate a checkpoint into a Hugging Face model directory OUT_DIR "
                                          "(config.json, safetensors, tokenizer files)",
                                          kExportExamples);
  exp->add_option("CHECKPOINT_DIR", a->checkpoint_dir,
                  "training.checkpoint_dir (its latest), one step directory, or a PEFT adapter directory")
      ->required();
  exp->add_option("-o,--output", a->out_dir, "output directory (OUT_DIR)")->required();
  exp->add_option("--dtype", a->dtype, "fp32 (the master weights), bf16 or fp16 (rounded to nearest even)")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}))
      ->capture_default_str();
  exp->add_option("--max-shard-size", a->max_shard_size,
                  "largest safetensors file before the weights are split into shards with an index (5GB, "
                  "500MB, 2GiB, or bytes), as transformers' max_shard_size")
      ->check(byte_size())
      ->capture_default_str();
  exp->add_flag("--merge", a->merge,
                "a LoRA run's checkpoint: the merged model (W + scale·B·A under the base model's names) instead "
                "of its PEFT adapter directory");
  exp->add_flag("--overwrite", a->overwrite,
                "OUT_DIR may be the model directory the run started from (or hold the checkpoint): its files are "
                "replaced, the new directory written whole beside it first");
  exp->add_option("--tokenizer-mismatch", a->tokenizer_mismatch,
                  "error or warn: what a model directory tokenizer other than the one the run's data was made with "
                  "gets (default: the run's data.tokenizer_mismatch); with warn the data's tokenizer ships")
      ->check(CLI::IsMember({"error", "warn"}));
  return {exp, [a = a](int, char**) { return exit_status("export", [&] { export_model(*a); }); }};
}

}  // namespace zt::cli
