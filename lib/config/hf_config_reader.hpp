#pragma once
// A Hugging Face model directory's config.json as a zerotrain model block: `model.path DIR` (and
// `--model DIR`) take the architecture and shape from it. Reads config.json as transformers 4.x
// writes it (top-level rope_theta and rope_scaling) and as 5.x does (rope_parameters), with
// transformers' default for a key it leaves out (e.g. Qwen3's head_dim 128), for model_type
// llama, mistral, qwen2, qwen3 and gpt2. The key mapping is hf_config_keys() (model_block.hpp).
#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace zt::config {

struct HfModelBlock {
  std::string file;                          // DIR/config.json
  nlohmann::json block;                      // zerotrain's model keys (preset "custom")
  std::map<std::string, std::string> from;   // model key -> the config.json key its value came from
};

// Throws zt::Error naming the file and the config.json key: no config.json, not JSON, a
// model_type zerotrain does not implement, a rope_type other than default or llama3, an
// activation other than the family's. Values are judged later, as the model block's (the
// messages then name config.json and the key, through `from`).
HfModelBlock read_hf_config(const std::string& dir);

// `model` with model.path DIR: every key config.json gives that the block does not set itself is
// added (the block's own keys and --set override config.json), preset "custom" unless one is
// named, and `origins` (may be null) records each added key as coming from "DIR/config.json
// (key)". A block without path, or with path "", is left as it is.
void expand_model_path(nlohmann::json& model, class ValueOrigins* origins);

// A directory holding a config.json.
bool is_hf_model_dir(const std::string& path);

}  // namespace zt::config
