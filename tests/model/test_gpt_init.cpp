#include <catch2/catch.hpp>

#include <cmath>

#include "model/gpt.hpp"

using namespace zt;

namespace {

struct Moments {
  double mean = 0, stddev = 0;
};

Moments moments(const float* p, size_t n) {
  double s = 0, s2 = 0;
  for (size_t i = 0; i < n; i++) {
    s += p[i];
    s2 += double(p[i]) * p[i];
  }
  Moments m;
  m.mean = s / n;
  m.stddev = std::sqrt(s2 / n - m.mean * m.mean);
  return m;
}

}  // namespace

TEST_CASE("GPT-2 initialisation follows the GPT-2 recipe", "[model][init]") {
  GptShape shape{4, 4, 64, 200, 32};  // vocab 200 padded to 256
  Gpt model(shape, 1, 32);
  const ParamLayout& layout = model.layout();
  std::vector<float> p(layout.total);
  model.init_params(p.data(), 0, p.size(), 42);
  auto tensor = [&](const std::string& name) { return p.data() + layout.find(name)->offset; };
  const size_t C = 64;

  // wte: normal(0, 0.02) on the real rows, zero padding rows.
  Moments wte = moments(tensor("wte.weight"), 200 * C);
  CHECK(std::abs(wte.mean) < 1e-3);
  CHECK(wte.stddev == Approx(0.02).epsilon(0.03));
  for (size_t i = 200 * C; i < 256 * C; i++) REQUIRE(tensor("wte.weight")[i] == 0.0f);
  CHECK(moments(tensor("wpe.weight"), 32 * C).stddev == Approx(0.02).epsilon(0.05));
  CHECK(moments(tensor("h.2.attn.c_attn.weight"), 3 * C * C).stddev == Approx(0.02).epsilon(0.03));
  CHECK(moments(tensor("h.3.mlp.c_fc.weight"), 4 * C * C).stddev == Approx(0.02).epsilon(0.03));
  // Residual projections: 0.02 / sqrt(2 · n_layer), n_layer = 4
  const double residual_std = 0.02 / std::sqrt(8.0);
  CHECK(moments(tensor("h.1.attn.c_proj.weight"), C * C).stddev == Approx(residual_std).epsilon(0.05));
  CHECK(moments(tensor("h.0.mlp.c_proj.weight"), 4 * C * C).stddev == Approx(residual_std).epsilon(0.03));
  for (const char* name : {"h.0.ln_1.weight", "h.3.ln_2.weight", "ln_f.weight"})
    for (size_t i = 0; i < C; i++) REQUIRE(tensor(name)[i] == 1.0f);
  for (auto& g : layout.groups)
    for (auto& t : g.tensors)
      if (t.name.ends_with("bias"))
        for (size_t i = 0; i < t.numel(); i++) REQUIRE(p[t.offset + i] == 0.0f);
}

TEST_CASE("GPT-2 initialisation of any range equals that range of the full init", "[model][init]") {
  Gpt model(*gpt_preset("toy"), 1, 16);
  const size_t total = model.layout().total;
  std::vector<float> full(total);
  model.init_params(full.data(), 0, total, 7);

  // Shards as ZeRO stage 3 cuts them: arbitrary boundaries, the last one past the end (padding).
  const size_t shard = total / 3 + 101;
  for (size_t begin = 0; begin < total; begin += shard) {
    std::vector<float> part(shard, -1.0f);
    model.init_params(part.data(), begin, shard, 7);
    for (size_t i = 0; i < shard; i++) {
      const float want = begin + i < total ? full[begin + i] : 0.0f;
      REQUIRE(part[i] == want);
    }
  }

  std::vector<float> other(total);
  model.init_params(other.data(), 0, total, 8);
  REQUIRE(other != full);  // the seed matters
  std::vector<float> again(total);
  model.init_params(again.data(), 0, total, 7);
  REQUIRE(again == full);
}
