#pragma once
// The model block: a preset of lib/model/gpt_shape.hpp, explicit sizes (n_layer, n_head, d_model,
// vocab_size, max_seq_len) and architecture keys (model_type, n_kv_head, head_dim, d_ff, norm_eps,
// rope_theta, rope_scaling, attention_bias, mlp_bias, tie_word_embeddings, sliding_window), a
// preset with some keys overridden, or model.path (a Hugging Face model directory's config.json,
// config/hf_config_reader.hpp); and `--model FILE|PRESET|DIR`.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "model/gpt_shape.hpp"

namespace zt::config {

// The model block that `--model` stands for: a JSON file (a path, or configs/models/NAME.json),
// {"preset": NAME} for a preset name, or {"path": DIR} for a directory holding a config.json.
// Throws zt::Error naming the argument.
nlohmann::json model_argument(const std::string& file_or_preset);
// The file `--model` reads: the path, configs/models/NAME.json, or DIR/config.json; none for a
// built-in preset.
std::optional<std::string> model_file(const std::string& file_or_preset);
// `--model` resolved to a full shape (for `zerotrain estimate`).
ModelConfig resolve_model_argument(const std::string& file_or_preset);
// A model block (the `model` of a config, as a checkpoint's meta.json records it) resolved to a
// full shape, model.path's config.json read. Errors name `source` (or config.json) and the key.
ModelConfig read_model_block(const nlohmann::json& block, const std::string& source);

GptShape shape_of(const ModelConfig& model);

// The key of a Hugging Face config.json each model key stands for, one to one: in the llama
// family's configs (transformers 4.x; 5.x moves rope_theta and rope_scaling into
// rope_parameters) and in GPT-2's (null: GPT-2's config has no such key).
struct HfConfigKey {
  const char* key;       // model.<key>
  const char* hf;        // llama, mistral, qwen2, qwen3
  const char* gpt2_hf;   // gpt2, or null
};
const std::vector<HfConfigKey>& hf_config_keys();

}  // namespace zt::config
