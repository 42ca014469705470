#include "model/gpt.hpp"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "core/rng.hpp"
#include "model/lora.hpp"

namespace zt {

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

void Gpt::init_params(float* dst, size_t begin, size_t count, uint64_t seed) const {
  if (!map_) return init_gpt_params(shape_, layout_, dst, begin, count, seed);
  // An expert-parallel layout's tensors take their values in the whole layout: the same as without.
  map_->read({begin, begin + count}, dst, [&](float* out, size_t at, size_t n) {
    init_gpt_params(shape_, whole_layout_, out, at, n, seed);
  });
}

void init_gpt_params(const GptShape& shape, const ParamLayout& layout, float* dst, size_t begin, size_t count,
                     uint64_t seed) {
  const size_t end = begin + count;
  const double std_base = 0.02;
  // GPT-2 scales its residual projections; transformers' llama-family init does not.
  const double std_residual = shape.model_type == ModelType::Gpt2 ? 0.02 / std::sqrt(2.0 * shape.n_layer) : std_base;
  const size_t C = size_t(shape.d_model);
  // Partition padding past the last tensor.
  if (end > layout.total) std::fill(dst + (std::max(begin, layout.total) - begin), dst + count, 0.0f);

  for (const ParamGroup& group : layout.groups) {
    for (const TensorSpec& t : group.tensors) {
      const size_t t0 = std::max(begin, t.offset), t1 = std::min(end, t.offset + t.numel());
      if (t0 >= t1) continue;
      float* out = dst + (t0 - begin);
      const std::string_view name = t.name;
      const LoraPart adapter = lora_part(name);
      if (adapter == LoraPart::B) {  // PEFT's init: the adapter starts as no change
        std::fill(out, out + (t1 - t0), 0.0f);
        continue;
      }
      if (adapter == LoraPart::A) {  // kaiming_uniform(a = sqrt(5)): bound 1 / sqrt(fan_in)
        const double bound = 1.0 / std::sqrt(double(t.shape[1]));
        for (size_t i = t0; i < t1; i++) out[i - t0] = float(bound * symmetric_uniform_at(seed, i));
        continue;
      }
      if (t.shape.size() == 1) {  // norm weights (LayerNorm, RMSNorm, q/k norms) 1; biases 0
        // Gemma's norms scale by 1 + weight: transformers starts them at 0.
        const float unit = shape.recipe().gemma ? 0.0f : 1.0f;
        std::fill(out, out + (t1 - t0), ends_with(name, ".weight") ? unit : 0.0f);
        continue;
      }
      const double stddev =
          ends_with(name, "attn.c_proj.weight") || ends_with(name, "mlp.c_proj.weight") ? std_residual : std_base;
      // Rows past the real vocabulary (token embedding, untied LM head) are padding and stay zero.
      const size_t real_end = has_vocabulary_rows(name) ? t.offset + size_t(shape.vocab_size) * C : t1;
      const std::ptrdiff_t n = std::ptrdiff_t(t1 - t0);
#pragma omp parallel for schedule(static)
      for (std::ptrdiff_t k = 0; k < n; k++) {
        const size_t i = t0 + size_t(k);
        out[k] = i < real_end ? float(stddev * normal_at(seed, i)) : 0.0f;
      }
    }
  }
}

}  // namespace zt
