#pragma once
// training.save_final: DIR/model.safetensors and DIR/config.json, each written whole or not at all
// (a temporary file, flushed and renamed). A failure removes the temporary file and names the key,
// the file and the reason: "training.save_final: cannot write 'DIR/model.safetensors.tmp': No
// space left on device (nothing written to 'DIR/model.safetensors'; the partial file was removed)".
#include <string>

#include "config/config.hpp"
#include "core/param_layout.hpp"

namespace zt {

void write_final_weights(const std::string& dir, const config::ModelConfig& model, const ParamLayout& layout,
                         const float* flat);

}  // namespace zt
