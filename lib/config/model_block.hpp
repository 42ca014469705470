#pragma once
// The model block: a preset of lib/model/gpt_shape.hpp, explicit sizes (n_layer, n_head, d_model,
// vocab_size, max_seq_len) and architecture keys (model_type, n_kv_head, head_dim, d_ff, norm_eps,
// rope_theta, rope_scaling, attention_bias, mlp_bias, tie_word_embeddings, sliding_window,
// layer_types; Gemma's query_pre_attn_scalar, attn_logit_softcapping, final_logit_softcapping,
// rope_local_base_freq), a
// preset with some keys overridden, or model.path (a Hugging Face model directory's config.json,
// hf/hf_config.hpp); `--model FILE|PRESET|DIR`; and where the model's weights start.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "config/value_sources.hpp"
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
// A model block a checkpoint recorded (config::model_json): every key is there, so its model.path
// is kept but not read (the directory may be gone).
ModelConfig read_recorded_model(const nlohmann::json& block, const std::string& source);

// `model` with model.path DIR: every key DIR/config.json gives that the block does not set itself
// is added (the block's own keys and --set override config.json), preset "custom" unless one is
// named, and `origins` (may be null) records each added key as coming from "DIR/config.json
// (key)". Returns config.json as read, or null for a block without path (or with path "").
nlohmann::ordered_json expand_model_path(nlohmann::json& model, class ValueOrigins* origins);

// Where a run's weights start, as a Hugging Face user expects: `--model DIR` (model.path) loads the
// directory's own weights, as from_pretrained does, unless training.init_from says otherwise: a
// model directory, a safetensors file or a checkpoint to take them from, or "random" for random
// values of the architecture (from_config). Without model.path they start random. Sets
// training.init_from to the path the weights come from, or "random", and returns the start line's
// account of it ("weights from DIR (model.path: ...)").
std::string resolve_initial_weights(Config& config, const ValueSources& sources);

}  // namespace zt::config
