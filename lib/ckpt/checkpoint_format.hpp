#pragma once
// A checkpoint on disk (docs/architecture.md, "Checkpoints"):
//
//   CHECKPOINT_DIR/latest                         "step_00000120\n": the newest complete checkpoint
//   CHECKPOINT_DIR/step_00000120/meta.json        the run, the state besides the tensors, a
//                                                 CRC32C per shard file, and its own CRC32C last
//   CHECKPOINT_DIR/step_00000120/shard-00003-of-00004.safetensors
//       rank 3's flat elements [begin, end) of the fp32 master weights and of Adam's m and v, as
//       three F32 tensors "master", "exp_avg", "exp_avg_sq" of shape [end - begin]; its header's
//       metadata records the range, the step and a CRC32C of the parameter layout too
//
// meta.json's last member, "meta_crc32c", is the CRC32C of every byte of the file before that key:
// an edited or damaged meta.json is refused. The step and layout are checked against each shard
// header as well, so that a meta.json moved in from another checkpoint is refused too.
//
// The shards' ranges, in rank order, cover the flat parameters [0, flat_params) exactly (padding is
// never saved), so any world size and stage can read any checkpoint: a rank reads the ranges of
// the files that intersect its own. With frozen parameters (training.freeze, LoRA's base weights)
// these are the elements of the trainable space (core/trainable_space.hpp): the layout marks the
// frozen tensors ("trainable": false), which the checkpoint does not hold; they come from where the
// run started (training.init_from, or the seeded initialisation) again. A step directory is written as
// step_00000120.tmp, meta.json last, and renamed when complete; `latest` is replaced (temporary file, fsync, rename)
// only after that. A directory without meta.json or with the .tmp suffix is never a checkpoint.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/param_layout.hpp"
#include "core/range.hpp"
#include "core/state_access.hpp"

namespace zt {

// What this zerotrain writes; a reader refuses versions it does not know. Version 1 (no checksum
// of meta.json, no step or layout in the shard headers) is still read, without those checks.
constexpr int kCheckpointFormatVersion = 2;
constexpr int kOldestReadableFormatVersion = 1;
std::string_view zerotrain_version();  // of this build, as meta.json records it

// The name of an optimizer state tensor in a shard file: "master", "exp_avg", "exp_avg_sq"
// (PyTorch's names).
std::string_view state_tensor_name(StateTensor t);

struct ShardRecord {
  int rank = 0;
  std::string file;  // name inside the step directory
  Range range;
  uint64_t bytes = 0;   // file size
  uint32_t crc32c = 0;  // of the whole file
};

// The fp16 dynamic loss scaler (DeepSpeed's rules); scale 1 and unused in fp32 and bf16.
struct ScalerRecord {
  float scale = 1.0f;
  int hysteresis_left = 0;
  int64_t iteration = 0, last_overflow_iteration = -1;
};

struct CheckpointMeta {
  int format_version = kCheckpointFormatVersion;
  std::string zerotrain_version = std::string(zt::zerotrain_version());
  int64_t step = 0;  // training steps done; a resumed run continues at step + 1
  int world_size = 1;
  int stage = 0;
  std::string dtype = "fp32";  // the training dtype (the shards are fp32 whatever it is)
  uint64_t flat_params = 0;    // the elements the shards hold together: layout's trainable ones
  uint64_t padded_params = 0;  // their partition's padded size (padding is not saved)
  // The architecture: the model block of the run's config (config::model_json: model_type and
  // every shape key), what export writes the Hugging Face config.json from and what resume checks.
  nlohmann::json model;
  ParamLayout layout;
  std::vector<ShardRecord> shards;  // one per rank, in rank order
  int64_t optimizer_steps = 0;      // updates applied: Adam's bias correction and the schedule position
  double next_lr = 0;               // the learning rate of the next update (for the reader; recomputed)
  ScalerRecord loss_scaler;
  nlohmann::json data;    // the data sampler's state (data/sampler.hpp)
  nlohmann::json rng;     // null: training draws no random numbers after initialisation
  nlohmann::json config;  // the resolved config of the run that saved it
};

// What a shard file's header records besides its tensors, checked against meta.json on load.
struct ShardIdentity {
  Range range;
  int64_t step = 0;
  uint32_t layout_crc32c = 0;  // layout_crc32c(meta.layout)
};
// The CRC32C of the layout as meta.json records it.
uint32_t layout_crc32c(const ParamLayout& layout);

// Names inside a checkpoint directory.
std::string step_dir_name(int64_t step);                    // "step_00000120"
std::string shard_file_name(int rank, int world_size);      // "shard-00003-of-00004.safetensors"
constexpr std::string_view kMetaFile = "meta.json";
constexpr std::string_view kLatestFile = "latest";
constexpr std::string_view kTmpSuffix = ".tmp";
// The step of a name step_NNN (any number of digits), or -1.
int64_t step_of_dir_name(std::string_view name);

nlohmann::ordered_json meta_to_json(const CheckpointMeta& meta);  // the run first, the layout and config last
// The bytes of meta.json: meta_to_json's, with "meta_crc32c" added last.
std::string meta_file_text(const CheckpointMeta& meta);
// Errors (zt::Error) name `path` and the key that is missing or wrong; a format version this build
// does not read is refused, naming it and the versions it reads; shard ranges must cover
// [0, flat_params) in rank order. Values from the file are quoted escaped (core/printable.hpp).
CheckpointMeta meta_from_json(const nlohmann::json& j, const std::string& path);
// Reads STEP_DIR/meta.json and checks its own checksum (format version 2 on).
CheckpointMeta read_meta(const std::string& step_dir);

}  // namespace zt
