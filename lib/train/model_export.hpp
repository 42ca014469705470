#pragma once
// The trained model as a Hugging Face model directory (hf/hf_writer.hpp), from its two sources:
// the ranks of a running job (training.save_final) and a checkpoint's shard files (`zerotrain
// export`). One writer, so the same state gives the same bytes.
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

namespace zt {

// What training.save_final writes: training.save_dtype, and the model directory the run started
// from (model.path, else training.init_from) with its config.json; the tokenizer that ships is
// chosen with the one the data records (train/tokenizer_shipping.hpp).
HfOutput final_weights_output(const config::Config& config,
                              const std::optional<TokenizerIdentity>& data_tokenizer = std::nullopt);

// training.save_final, collective over comm: group by group, each rank contributes the master
// weights of its piece (pieces[rank], the pieces of all ranks in rank order covering the flat
// parameters), all-gathered into a device buffer of one group; rank 0 writes. A failed write is
// reported once by rank 0 and thrown as CheckpointFailed on every rank.
void save_gathered_weights(const std::string& out_dir, const ParamLayout& layout, const GptShape& shape,
                           const HfOutput& output, Communicator& comm, Device& device, const StateAccess& state,
                           const std::vector<Range>& pieces);

// `zerotrain export`: checkpoint is a checkpoint root (the step its `latest` names) or a step
// directory, of any family, world size and stage. The output's files are created first, then every
// shard file's CRC32C is checked, then the weights are read group by group. Without a source
// directory in `output`, the model directory the checkpoint's run started from (its tokenizer
// files and config.json) where it is still there, and the tokenizer its data was made with.
// `tokenizer_mismatch`: what a model directory's tokenizer other than the data's gets (default: the
// run's data.tokenizer_mismatch). The output may not be or hold the checkpoint or that model
// directory unless `overwrite` (train/output_paths.hpp); it is written whole beside its place and
// swapped in.
void export_checkpoint(const std::string& checkpoint, const std::string& out_dir, HfOutput output,
                       std::optional<TokenizerMismatch> tokenizer_mismatch = std::nullopt, bool overwrite = false);

}  // namespace zt
