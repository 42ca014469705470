#pragma once
// The trained model as a Hugging Face model directory (hf/hf_writer.hpp) or, for a LoRA run, as a
// PEFT adapter directory (hf/peft_adapter.hpp), from its two sources: the ranks of a running job
// (training.save_final) and a checkpoint's shard files (`zerotrain export`). One writer, so the
// same state gives the same bytes; the model's groups are read back by start/run_weights.hpp.
#include <optional>
#include <string>
#include <vector>

#include "ckpt/checkpoint_format.hpp"
#include "comm/communicator.hpp"
#include "config/config.hpp"
#include "core/range.hpp"
#include "core/state_access.hpp"
#include "data/tokenizer_identity.hpp"
#include "hf/hf_writer.hpp"
#include "start/run_weights.hpp"

namespace zt {

// What training.save_final writes: training.save_dtype, and the model directory the run started
// from (model.path, else training.init_from) with its config.json. The tokenizer that ships (for
// save_final and export alike): the model directory's when the run's data was made with that
// tokenizer (or records none); the data's when there is no model directory or it holds no
// tokenizer; when the two differ, a refusal naming both, or with data.tokenizer_mismatch warn a
// warning and the data's tokenizer, whose ids the model was trained on (docs/data.md).
HfOutput final_weights_output(const config::Config& config,
                              const std::optional<TokenizerIdentity>& data_tokenizer = std::nullopt);
// The adapter directory for a LoRA run (unless lora.save_merged), else the model.
SavedForm final_form(const config::Config& config);

// training.save_final, collective over comm: group by group, each rank contributes the master
// weights of its piece of the trainable space (pieces[rank], the pieces of all ranks in rank
// order covering it), all-gathered into a device buffer of one group; rank 0 reads the frozen
// tensors from `initial` and writes. A failed write is reported once by rank 0 and thrown as
// CheckpointFailed on every rank.
void save_gathered_weights(const std::string& out_dir, SavedForm form, const TrainedModel& model,
                           const HfOutput& output, Communicator& comm, Device& device, const StateAccess& state,
                           const std::vector<Range>& pieces, const InitialWeights& initial);

// `zerotrain export`: checkpoint is a checkpoint root (the step its `latest` names) or a step
// directory, of any family, world size and stage. The output's files are created first, then every
// shard file's CRC32C is checked, then the weights are read group by group. Without a source
// directory in `output`, the model directory the checkpoint's run started from (its tokenizer
// files and config.json) where it is still there, and the tokenizer its data was made with. A
// LoRA run's checkpoint gives its adapter directory, or with `merge` the merged model; frozen
// tensors are read from where the run started (its training.init_from, or its seed), which must
// still be there. `tokenizer_mismatch`: what a model directory's tokenizer other than the data's
// gets (default: the run's data.tokenizer_mismatch). The output may not be or hold the checkpoint
// or that model directory unless `overwrite` (train/output_paths.hpp); it is written whole beside
// its place and swapped in.
void export_checkpoint(const std::string& checkpoint, const std::string& out_dir, HfOutput output, bool merge = false,
                       std::optional<TokenizerMismatch> tokenizer_mismatch = std::nullopt, bool overwrite = false);

// `zerotrain export ADAPTER_DIR`: a PEFT adapter directory (a LoRA run's training.save_final) on the
// base model its adapter_config.json names (inference/model_source.hpp): the adapter directory again
// in output.dtype, or with `merge` the merged model with the base's config.json. The output may not
// be or hold the adapter or its base unless `overwrite`.
void export_adapter(const std::string& adapter_dir, const std::string& out_dir, HfOutput output, bool merge,
                    bool overwrite);

}  // namespace zt
