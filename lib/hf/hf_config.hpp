#pragma once
// A model directory's config.json, read and written from one key table: each key of zerotrain's
// model block and the config.json key it stands for, one to one, in the llama family's configs
// (transformers 4.x; 5.x moves rope_theta and rope_scaling into rope_parameters) and in GPT-2's.
//
// Reading (`--model DIR`, model.path) takes config.json as transformers 4.x and 5.x write it, with
// transformers' default for a key it leaves out (e.g. Qwen3's head_dim 128), for model_type llama,
// mistral, qwen2, qwen3, gemma2, gemma3_text and gpt2 (gemma3, with a vision tower, and later
// Gemmas' keys that change the computation are refused by name). Writing (save_final, `zerotrain export`) gives what
// save_pretrained writes for the family (GPT2LMHeadModel, LlamaForCausalLM, MistralForCausalLM,
// Qwen2ForCausalLM, Qwen3ForCausalLM, Gemma2ForCausalLM, Gemma3ForCausalLM): keys a family's config
// class does not have are left out
// (family_options, model/gpt_shape.hpp). With the config.json the run started from (same
// model_type), its other keys carry over in their order (bos_token_id, eos_token_id,
// transformers_version, ...), and so does its layout of the rotary keys.
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "model/gpt_shape.hpp"

namespace zt {

struct HfConfigKey {
  const char* key;      // model.<key>
  const char* hf;       // llama, mistral, qwen2, qwen3
  const char* gpt2_hf;  // gpt2, or null: GPT-2's config has no such key
};
const std::vector<HfConfigKey>& hf_config_keys();

// The architecture keys of zerotrain's model block for a shape: model_type and the sizes; the
// llama family every key, rope_scaling and layer_types null where they say nothing.
nlohmann::json model_keys(const GptShape& shape);

struct HfConfig {
  std::string file;                         // DIR/config.json
  nlohmann::ordered_json json;              // as the file holds it
  nlohmann::json block;                     // zerotrain's model keys (preset "custom")
  std::map<std::string, std::string> from;  // model key -> the config.json key its value came from
};

// Throws zt::Error naming the file and the config.json key: no config.json, not JSON, a
// model_type zerotrain does not implement, a rope_type other than default or llama3, an activation
// other than the family's. Values are judged later, as the model block's (the messages then name
// config.json and the key, through `from`).
HfConfig read_hf_config(const std::string& dir);
// DIR/config.json as it is, its keys in the file's order; errors name the file.
nlohmann::ordered_json read_hf_config_json(const std::string& dir);
// The model_type of DIR/config.json (an error naming it where zerotrain implements none).
ModelType hf_model_type(const std::string& dir);

// "LlamaForCausalLM" for llama, ...
std::string hf_architecture(ModelType type);
// transformers' name of a dtype: "float32", "bfloat16", "float16".
std::string torch_dtype_name(DType dtype);

// The config.json of a model of `shape` saved in `dtype`. `source`: the config.json the run
// started from, or null; torch_dtype (and transformers 5's dtype, where the source has it) names
// `dtype`.
nlohmann::ordered_json hf_config_json(const GptShape& shape, DType dtype,
                                      const nlohmann::ordered_json& source = nullptr);

}  // namespace zt
