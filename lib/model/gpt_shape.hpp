#pragma once
// The shape of a GPT-2 model, its presets, and its parameter count.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace zt {

struct GptShape {
  int n_layer = 0;
  int n_head = 0;
  int d_model = 0;
  int vocab_size = 0;   // as the user sees it; padded to a multiple of 128 inside the model
  int max_seq_len = 0;

  int padded_vocab() const { return (vocab_size + 127) / 128 * 128; }
  // Trainable parameters as exported (unpadded vocabulary; LM head tied to wte).
  size_t num_params() const {
    size_t C = size_t(d_model), L = size_t(n_layer);
    size_t per_block = 12 * C * C + 13 * C;  // ln_1, c_attn, attn c_proj, ln_2, c_fc, mlp c_proj
    return size_t(vocab_size) * C + size_t(max_seq_len) * C + L * per_block + 2 * C;
  }
  // Elements of the flat parameter buffer: num_params plus the zero rows that pad the vocabulary.
  size_t flat_size() const { return num_params() + size_t(padded_vocab() - vocab_size) * size_t(d_model); }
};

struct GptPreset {
  const char* name;
  GptShape shape;
};

inline const std::vector<GptPreset>& gpt_presets() {
  static const std::vector<GptPreset> presets = {
      {"toy", {2, 4, 64, 256, 128}},  // bytes of text; trains in seconds on a CPU
      {"gpt2-tiny", {4, 4, 256, 50257, 256}},
      {"gpt2-124m", {12, 12, 768, 50257, 1024}},
      {"gpt2-350m", {24, 16, 1024, 50257, 1024}},
      {"gpt2-774m", {36, 20, 1280, 50257, 1024}},
      {"gpt2-1.5b", {48, 25, 1600, 50257, 1024}},
  };
  return presets;
}

inline std::optional<GptShape> gpt_preset(const std::string& name) {
  for (auto& p : gpt_presets())
    if (name == p.name) return p.shape;
  return std::nullopt;
}

}  // namespace zt
