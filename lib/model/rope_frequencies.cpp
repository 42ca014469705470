#include "model/rope_frequencies.hpp"

#include <cmath>
#include <numbers>

namespace zt {

std::vector<float> rope_inverse_frequencies(const GptShape& shape) {
  const int dim = shape.head_size();
  std::vector<float> inv(size_t(dim / 2));
  for (size_t i = 0; i < inv.size(); i++) {
    // Each step an fp32 operation, as torch's: arange(0, dim, 2) / dim, base ** that, 1 / that.
    const float exponent = float(2 * i) / float(dim);
    const float power = float(std::pow(shape.rope_theta, double(exponent)));
    inv[i] = 1.0f / power;
  }
  const RopeScaling& r = shape.rope_scaling;
  if (r.type == RopeType::Linear)
    for (float& f : inv) f /= float(r.factor);
  if (r.type != RopeType::Llama3) return inv;
  const float factor = float(r.factor), low = float(r.low_freq_factor), high = float(r.high_freq_factor);
  const float old_context = float(r.original_max_position_embeddings);
  const float low_freq_wavelen = float(double(r.original_max_position_embeddings) / r.low_freq_factor);
  const float high_freq_wavelen = float(double(r.original_max_position_embeddings) / r.high_freq_factor);
  for (float& f : inv) {
    const float wavelen = float(2 * std::numbers::pi) / f;
    const float scaled = wavelen > low_freq_wavelen ? f / factor : f;
    if (wavelen < high_freq_wavelen || wavelen > low_freq_wavelen) {
      f = scaled;
      continue;
    }
    const float smooth = (old_context / wavelen - low) / (high - low);
    f = (1.0f - smooth) * scaled / factor + smooth * scaled;
  }
  return inv;
}

}  // namespace zt
