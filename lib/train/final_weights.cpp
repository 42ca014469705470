#include "train/final_weights.hpp"

#include <filesystem>

#include "ckpt/safetensors.hpp"
#include "core/directories.hpp"
#include "core/error.hpp"

namespace zt {

void write_final_weights(const std::string& dir, const config::ModelConfig& m, const ParamLayout& layout,
                         const float* flat) {
  constexpr const char* kKey = "training.save_final";
  make_directories(kKey, dir);
  try {
    save_gpt2_safetensors((std::filesystem::path(dir) / "model.safetensors").string(), layout, flat, m.vocab_size);
    write_gpt2_config_json(dir, m.n_layer, m.n_head, m.d_model, m.vocab_size, m.max_seq_len);
  } catch (const Error& e) {
    fail("{}: {}", kKey, e.what());
  }
}

}  // namespace zt
