#pragma once
// The model block: a preset of lib/model/gpt_shape.hpp, explicit n_layer/n_head/d_model/
// vocab_size/max_seq_len, or a preset with some keys overridden; and `--model FILE|PRESET`.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "config/config.hpp"
#include "model/gpt_shape.hpp"

namespace zt::config {

// The model block that `--model` stands for: a JSON file (a path, or configs/models/NAME.json),
// or {"preset": NAME} for a preset name. Throws zt::Error naming the argument.
nlohmann::json model_argument(const std::string& file_or_preset);
// The file `--model` reads: the path, or configs/models/NAME.json; none for a built-in preset.
std::optional<std::string> model_file(const std::string& file_or_preset);
// `--model` resolved to a full shape (for `zerotrain estimate`).
ModelConfig resolve_model_argument(const std::string& file_or_preset);

GptShape shape_of(const ModelConfig& model);

}  // namespace zt::config
