#pragma once
// The paths a run writes, checked before anything is opened for writing, so that no input is ever
// lost and no run fails after hours of training because it cannot write its results:
// - No output (training.metrics, the csv_monitor and tensorboard files, training.save_final,
//   training.checkpoint_dir, training.log_dir, an offload nvme_path) may name an input (the config
//   file, data.train, data.val, training.init_from) or another output. Paths are compared after
//   resolving symbolic links and "..", and by device and inode where both exist; a directory output
//   must not hold an input, or another output, under a name it writes (save_final=DIR writes
//   DIR/model.safetensors, DIR/config.json, DIR/tokenizer.json, ... (hf/hf_dir.hpp), so
//   init_from=DIR/model.safetensors collides).
// - Every output location is created and probed for writing before step 1: its directory is
//   made, and a probe file is created, written and removed there. Errors name the key.
#include <filesystem>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace zt {

// One place a run writes.
struct OutputLocation {
  std::string key;  // the config key it comes from, e.g. "training.metrics"
  std::filesystem::path path{};
  bool directory = false;  // a directory the run writes files into; else one file
  // Inside a directory: the names the run writes there, and prefixes of names (tensorboard's
  // event files). A directory that `exclusive` writes is shared with no other output.
  std::vector<std::string> files{}, file_prefixes{};
  bool exclusive = false;
  bool every_rank = false;  // written by every rank (log_dir, checkpoint_dir, nvme_path); else rank 0
};

struct InputFile {
  std::string key;  // "data.train", "--config", ...
  std::filesystem::path path;
};

std::vector<OutputLocation> output_locations(const config::Config& config, int world_size);
std::vector<InputFile> input_files(const config::Config& config);

// Throws zt::Error naming both keys when an output names an input or another output.
void check_output_paths(const config::Config& config, int world_size);

// Creates the output locations this rank writes and probes each for writing; throws zt::Error
// naming the key and the reason ("training.save_final: cannot create directory 'a/final': 'a' is
// not a directory").
void prepare_outputs(const config::Config& config, int rank, int world_size);

}  // namespace zt
