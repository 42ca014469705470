#pragma once
// The paths a run writes, checked before anything is opened for writing, so that no input is ever
// lost and no run fails after hours of training because it cannot write its results:
// - No output (training.metrics, the csv_monitor and tensorboard files, training.save_final,
//   training.checkpoint_dir, training.log_dir, an offload nvme_path; `zerotrain export -o`) may
//   name an input (the config file, the model file or directory, data.train, data.val,
//   training.init_from, a checkpoint resumed from elsewhere, training.sample_tokenizer) or another
//   output, and no output directory may hold an input at all: a run writes nowhere near what it
//   reads. Paths are compared after resolving symbolic links and "..", and by device and inode
//   where both exist; a directory output must not hold another output under a name it writes
//   (save_final=DIR writes DIR/model.safetensors, DIR/config.json, DIR/tokenizer.json, ...
//   (hf/hf_dir.hpp)), and a file output must not be a file a directory input reads.
// - `--overwrite` (training.overwrite) is for a user who means to write where inputs lie: an output
//   directory may then hold inputs, and a model directory output (save_final, export) may replace
//   the very files it read, since it is written whole beside its place and swapped in
//   (hf/hf_writer.hpp). A file output is never an input.
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
  bool replaced_whole = false;  // a model directory written beside its place and swapped in
  std::string writes{};  // what an adapter directory output holds, for messages: "the LoRA adapter: ..."
};

struct InputFile {
  std::string key;  // "data.train", "--config", ...
  std::filesystem::path path;
  std::vector<std::string> files{};  // a directory input: the names read in it
};

std::vector<OutputLocation> output_locations(const config::Config& config, int world_size);
std::vector<InputFile> input_files(const config::Config& config);

// `inner` is `outer` or lies below it, symbolic links and ".." resolved.
bool lies_in(const std::filesystem::path& inner, const std::filesystem::path& outer);

// Throws zt::Error naming both keys when an output names or holds an input, or names another output.
void check_output_paths(const config::Config& config, int world_size);
// The same for one output and the inputs it must leave alone (`zerotrain export -o`).
void check_output_against(const OutputLocation& output, const std::vector<InputFile>& inputs, bool overwrite);
// A model directory read as an input: its config.json, weights and tokenizer files.
InputFile model_directory_input(const std::string& key, const std::string& dir);
// What a run's weights start from, as inputs: `init_from` (a model directory or a file; none when
// "" or `model_dir`, an input already) and `lora_init_from`'s adapter files (none when ""), named
// by `init_key` and `lora_key`. Training and export both list them through here.
void add_start_inputs(std::vector<InputFile>& inputs, const std::string& init_from, const std::string& lora_init_from,
                      const std::string& model_dir, const std::string& init_key, const std::string& lora_key);
// save_final's and export's output: a model directory, or a LoRA run's adapter directory.
OutputLocation model_directory_output(const std::string& key, const std::string& dir, bool adapter);

// Creates the output locations this rank writes and probes each for writing; throws zt::Error
// naming the key and the reason ("training.save_final: cannot create directory 'a/final': 'a' is
// not a directory"), having removed the directories it made. Returns the directories it made (the
// first of each path), which a run that then fails to start removes again (remove_empty_directories).
std::vector<std::filesystem::path> prepare_outputs(const config::Config& config, int rank, int world_size);

}  // namespace zt
