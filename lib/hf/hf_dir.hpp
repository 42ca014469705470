#pragma once
// A Hugging Face model directory, as transformers' save_pretrained writes it and zerotrain reads
// and writes it, and what kind of thing a path given for a model is:
//
//   DIR/config.json                         the architecture (hf/hf_config.hpp)
//   DIR/model.safetensors                   the weights under Hugging Face names (hf/hf_weights.hpp)
//   or DIR/model-00001-of-00003.safetensors ... and DIR/model.safetensors.index.json
//   DIR/tokenizer.json, tokenizer_config.json, ..., generation_config.json
//
// or a PEFT LoRA adapter directory (hf/peft_adapter.hpp): adapter_config.json, which names its base
// model, and adapter_model.safetensors.
#include <string>
#include <string_view>
#include <vector>

namespace zt {

inline constexpr std::string_view kHfConfigFile = "config.json";
inline constexpr std::string_view kHfWeightsFile = "model.safetensors";
inline constexpr std::string_view kHfIndexFile = "model.safetensors.index.json";
inline constexpr std::string_view kHfShardPrefix = "model-";  // model-00001-of-00003.safetensors
inline constexpr std::string_view kPeftConfigFile = "adapter_config.json";
inline constexpr std::string_view kPeftWeightsFile = "adapter_model.safetensors";
inline constexpr std::string_view kPeftBaseRecordFile = "zerotrain_base_model.json";  // the base it was made on

std::string hf_shard_file_name(int shard, int shards);  // shard counts from 1, as transformers names them
bool is_hf_shard_file_name(const std::string& name);
// The files that hold a model's weights (model.safetensors, its index and shards), and those of a
// PEFT adapter. A directory written as the one loses the other's: transformers' from_pretrained
// takes a directory with adapter_config.json for the adapter on its base, whatever weights lie
// beside it, and zerotrain would read those weights.
bool is_hf_weights_file(const std::string& name);
bool is_peft_adapter_file(const std::string& name);
// DIR/name
std::string hf_file(const std::string& dir, std::string_view name);

// The files a directory's tokenizer and generation settings come in, copied with the model.
const std::vector<std::string>& hf_tokenizer_files();
// Every name a model directory's writer may leave in it (and their temporary names), besides the
// shards.
std::vector<std::string> hf_directory_files();

// What a path given for a model (--model, training.init_from, generate and eval's --model) is.
enum class PathKind {
  Missing,     // no such file or directory
  File,        // a file: a model block's JSON, or safetensors weights
  Checkpoint,  // a zerotrain checkpoint: a step directory (meta.json) or a root (`latest`)
  ModelDir,    // a Hugging Face model directory: config.json, or weights as model*.safetensors
  Adapter,     // a PEFT adapter directory: adapter_config.json, and no model weights
  OtherDir,    // a directory that holds none of these
};
PathKind classify_path(const std::string& path);

bool has_hf_config(const std::string& dir);   // DIR/config.json
bool is_peft_adapter_dir(const std::string& dir);  // DIR/adapter_config.json
// The model directory a run started from: model.path, else training.init_from where it names a
// directory holding a config.json; "" if none.
std::string hf_source_directory(const std::string& model_path, const std::string& init_from);
// That directory (hf_source_directory) when it holds a tokenizer; "" otherwise.
std::string model_tokenizer_directory(const std::string& model_path, const std::string& init_from);
bool has_hf_weights(const std::string& dir);  // DIR/model.safetensors or its index

}  // namespace zt
