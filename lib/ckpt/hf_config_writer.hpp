#pragma once
// The config.json of a Hugging Face model directory, as transformers' save_pretrained writes it for
// the model's family (GPT2LMHeadModel, LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM,
// Qwen3ForCausalLM). Each model key becomes the config.json key that hf_config_keys()
// (config/model_block.hpp) pairs it with, the table the directory reader reads by; keys a family's
// config class does not have are left out (attention_bias outside llama and qwen3, mlp_bias outside
// llama, sliding_window for llama).
//
// With the config.json of the directory the run started from (same model_type), its other keys
// carry over in their order (bos_token_id, eos_token_id, max_window_layers, transformers_version,
// ...), and its layout of the rotary keys too: top-level rope_theta and rope_scaling
// (transformers 4), or rope_parameters (transformers 5).
#include <nlohmann/json.hpp>
#include <string>

#include "config/config.hpp"
#include "core/dtype.hpp"

namespace zt {

// "LlamaForCausalLM" for "llama", ...; throws zt::Error for a model_type without one.
std::string hf_architecture(const std::string& model_type);
// transformers' name of a dtype: "float32", "bfloat16", "float16".
std::string torch_dtype_name(DType dtype);

// `source`: the input directory's config.json, or null. torch_dtype (and transformers 5's dtype,
// where the source has it) names `dtype`, the dtype of the saved tensors.
nlohmann::ordered_json hf_config_json(const config::ModelConfig& model, DType dtype,
                                      const nlohmann::ordered_json& source = nullptr);

}  // namespace zt
