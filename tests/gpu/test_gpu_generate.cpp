// Generation on the GPU: GPT-2's greedy tokens against a KV cache, and those of a model with a
// sliding layer (whose cache keeps its window's rows only), are the argmax of the full forward over
// prompt + generated tokens on the same device (no drift of the cache), in fp32 and bf16, and in fp32 they are the
// CPU's tokens with logits within its tolerance; a seed samples the same tokens twice.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "inference/device_weights.hpp"
#include "inference/generation.hpp"
#include "kernels/backend.hpp"
#include "kernels/cuda/cuda_backend.hpp"
#include "model/gpt.hpp"

using namespace zt;

namespace {

constexpr int kPositions = 20;

// A fresh model's weights made ten times larger: logits far from uniform, each argmax clear.
std::vector<float> sharp_weights(const GptShape& shape) {
  Gpt model(shape, 1, 1);
  std::vector<float> w(model.layout().total);
  model.init_params(w.data(), 0, w.size(), 21);
  for (float& x : w) x *= 10.0f;
  return w;
}

struct Decoded {
  std::vector<int32_t> tokens;
  std::vector<float> last_logits;  // of the full forward's last position
  std::vector<int32_t> full_argmax;  // of the full forward over prompt + tokens, every position
};

Decoded decode(const Backend& backend, const GptShape& shape, const std::vector<float>& w, SamplingOptions sampling) {
  Gpt model(shape, 1, kPositions, true, backend);
  DeviceWeights weights(model.layout(), w.data(), backend);
  const std::vector<int32_t> prompt = {72, 101, 108, 108, 111};
  GenerationLimits limits;
  limits.max_new_tokens = 10;
  TokenSampler sampler(sampling);
  Decoded d;
  d.tokens = generate(model, weights, prompt, limits, sampler, [](int32_t) {}).tokens;
  std::vector<int32_t> all = prompt;
  all.insert(all.end(), d.tokens.begin(), d.tokens.end());
  const int L = int(all.size());
  Gpt full(shape, 1, L, false, backend);
  full.forward(all.data(), nullptr, 1, L, weights);
  std::vector<float> row(static_cast<size_t>(shape.vocab_size));
  for (int t = 0; t < L; t++) {
    full.copy_logits_row(t, row.data());
    d.full_argmax.push_back(int32_t(std::max_element(row.begin(), row.end()) - row.begin()));
  }
  d.last_logits = row;
  for (size_t i = 0; i < d.tokens.size(); i++) d.full_argmax[i] = d.full_argmax[prompt.size() - 1 + i];
  d.full_argmax.resize(d.tokens.size());
  return d;
}

}  // namespace

TEST_CASE("GPU generation: greedy tokens are the full forward's argmax, and the CPU's in fp32", "[gpu][generate]") {
  // GPT-2, and a llama-family model whose second layer slides over 3 keys: its KV cache a ring of
  // 3 rows that the prompt and the new tokens wrap around many times.
  GptShape sliding = *gpt_preset("qwen3-tiny");
  sliding.sliding_window = 3;
  sliding.layer_types = {LayerAttention::Full, LayerAttention::Sliding};
  const GptShape shape = GENERATE_COPY(*gpt_preset("toy"), sliding);
  INFO(describe(shape));
  const std::vector<float> w = sharp_weights(shape);
  const Decoded cpu = decode(cpu_backend(), shape, w, {0.0, 0, 1.0, 1});
  REQUIRE(cpu.tokens == cpu.full_argmax);
  for (DType dt : {DType::F32, DType::BF16}) {
    INFO(dtype_name(dt));
    const Decoded gpu = decode(cuda::backend(0, dt), shape, w, {0.0, 0, 1.0, 1});
    CHECK(gpu.tokens == gpu.full_argmax);
    if (dt != DType::F32) continue;
    CHECK(gpu.tokens == cpu.tokens);
    double num = 0, den = 0;
    for (size_t v = 0; v < cpu.last_logits.size(); v++) {
      num += std::pow(double(gpu.last_logits[v]) - cpu.last_logits[v], 2);
      den += std::pow(double(cpu.last_logits[v]), 2);
    }
    CHECK(std::sqrt(num / den) <= 1e-5);
  }
}

TEST_CASE("GPU generation: a seed samples the same tokens twice", "[gpu][generate][smoke]") {
  const GptShape shape = *gpt_preset("toy");
  const std::vector<float> w = sharp_weights(shape);
  const SamplingOptions sampling{5.0, 0, 0.95, 8};
  const Decoded a = decode(cuda::backend(0, DType::BF16), shape, w, sampling);
  const Decoded b = decode(cuda::backend(0, DType::BF16), shape, w, sampling);
  CHECK(a.tokens == b.tokens);
}
