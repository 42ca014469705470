#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "core/error.hpp"
#include "optim/adamw.hpp"

using namespace zt;

namespace {

std::vector<float> floats(const nlohmann::json& j) {
  std::vector<float> v;
  for (auto& x : j) v.push_back(float(x.get<double>()));
  return v;
}

// Distance in units in the last place between two finite floats of the same sign.
int64_t ulp_distance(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  if (ia < 0) ia = INT32_MIN - ia;
  if (ib < 0) ib = INT32_MIN - ib;
  return std::llabs(int64_t(ia) - int64_t(ib));
}

// Textbook Adam/AdamW in double, written from the algorithm (Loshchilov & Hutter; Kingma & Ba).
struct ReferenceAdam {
  std::vector<double> p, m, v;
  void step(const std::vector<float>& g_in, const AdamWHyper& h, int64_t t, bool decay) {
    double wd = decay ? h.weight_decay : 0.0;
    for (size_t i = 0; i < p.size(); ++i) {
      double g = g_in[i];
      if (!h.adam_w_mode) g += wd * p[i];
      else p[i] -= double(h.lr) * wd * p[i];
      m[i] = h.beta1 * m[i] + (1 - double(h.beta1)) * g;
      v[i] = h.beta2 * v[i] + (1 - double(h.beta2)) * g * g;
      double mhat = h.bias_correction ? m[i] / (1 - std::pow(double(h.beta1), double(t))) : m[i];
      double vhat = h.bias_correction ? v[i] / (1 - std::pow(double(h.beta2), double(t))) : v[i];
      p[i] -= double(h.lr) * mhat / (std::sqrt(vhat) + double(h.eps));
    }
  }
};

}  // namespace

TEST_CASE("adamw matches torch.optim.AdamW / Adam(weight_decay) bit for bit", "[optim][adamw]") {
  std::ifstream in(std::string(ZT_SOURCE_DIR) + "/tests/optim/adamw_torch_fixture.json");
  REQUIRE(in.good());
  auto fixture = nlohmann::json::parse(in);
  REQUIRE(fixture["cases"].size() == 3);
  for (auto& c : fixture["cases"]) {
    INFO("case " << c["name"].get<std::string>());
    AdamWHyper h{float(c["lr"].get<double>()), float(c["beta1"].get<double>()),
                 float(c["beta2"].get<double>()), float(c["eps"].get<double>()),
                 float(c["weight_decay"].get<double>())};
    h.adam_w_mode = c["adam_w_mode"].get<bool>();
    std::vector<float> p = floats(c["initial"]);
    std::vector<float> m(p.size(), 0.f), v(p.size(), 0.f);
    int64_t worst = 0;
    for (size_t s = 0; s < c["grads"].size(); ++s) {
      std::vector<float> g = floats(c["grads"][s]);
      adamw_update(p.data(), g.data(), m.data(), v.data(), p.size(), h, int64_t(s + 1), true);
      std::vector<float> expected = floats(c["params"][s]), expected_m = floats(c["exp_avg"][s]),
                         expected_v = floats(c["exp_avg_sq"][s]);
      for (size_t i = 0; i < p.size(); ++i) {
        worst = std::max(worst, ulp_distance(p[i], expected[i]));
        worst = std::max(worst, ulp_distance(m[i], expected_m[i]));
        worst = std::max(worst, ulp_distance(v[i], expected_v[i]));
      }
    }
    CHECK(worst == 0);
  }
}

TEST_CASE("adamw agrees with a double-precision textbook reference", "[optim][adamw]") {
  const size_t n = 1000;
  std::mt19937 gen(7);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (bool w_mode : {true, false})
    for (bool bias_correction : {true, false})
      for (bool decay : {true, false}) {
        INFO("adam_w_mode " << w_mode << " bias_correction " << bias_correction << " decay " << decay);
        AdamWHyper h{1e-2f, 0.9f, 0.999f, 1e-8f, 0.05f, bias_correction, w_mode};
        std::vector<float> p(n), m(n, 0.f), v(n, 0.f);
        for (auto& x : p) x = normal(gen);
        ReferenceAdam ref{std::vector<double>(p.begin(), p.end()), std::vector<double>(n, 0.0),
                          std::vector<double>(n, 0.0)};
        for (int64_t t = 1; t <= 5; ++t) {
          std::vector<float> g(n);
          for (auto& x : g) x = normal(gen);
          adamw_update(p.data(), g.data(), m.data(), v.data(), n, h, t, decay);
          ref.step(g, h, t, decay);
        }
        double worst = 0;
        for (size_t i = 0; i < n; ++i) worst = std::max(worst, std::fabs(p[i] - ref.p[i]));
        CHECK(worst < 1e-6);
      }
}

TEST_CASE("adamw decay modes and the decay flag change what they should", "[optim][adamw]") {
  // One element, first step, hand computation: with bias correction the Adam step is
  // lr * g / (|g| + eps) = lr * sign(g) (up to eps).
  AdamWHyper h{0.1f, 0.9f, 0.999f, 0.0f, 0.5f};
  float p = 2.f, g = 4.f, m = 0.f, v = 0.f;
  adamw_update(&p, &g, &m, &v, 1, h, 1, true);
  CHECK(p == Approx(2.0 * (1 - 0.1 * 0.5) - 0.1).epsilon(1e-6));  // decoupled: 1.9 - 0.1
  CHECK(m == Approx(0.4));
  CHECK(v == Approx(0.001 * 16).epsilon(1e-4));  // 1 - 0.999f is 1.00005e-3

  p = 2.f, m = 0.f, v = 0.f;
  adamw_update(&p, &g, &m, &v, 1, h, 1, false);
  CHECK(p == Approx(1.9).epsilon(1e-6));  // no decay: just the Adam step

  h.adam_w_mode = false;  // L2: g' = 4 + 0.5*2 = 5, the step is still lr*sign: 1.9
  p = 2.f, m = 0.f, v = 0.f;
  adamw_update(&p, &g, &m, &v, 1, h, 1, true);
  CHECK(p == Approx(1.9).epsilon(1e-6));
  CHECK(m == Approx(0.5));  // the moment saw the decayed gradient
}

TEST_CASE("adamw gives identical bits however the range is split", "[optim][adamw]") {
  const size_t n = 100003;  // several OpenMP chunks plus a ragged tail
  std::mt19937 gen(3);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> p(n), g(n);
  for (auto& x : p) x = normal(gen);
  for (auto& x : g) x = normal(gen);
  AdamWHyper h{3e-4f, 0.9f, 0.95f, 1e-8f, 0.1f};
  std::vector<float> p1 = p, m1(n, 0.f), v1(n, 0.f), p2 = p, m2(n, 0.f), v2(n, 0.f);
  for (int64_t t = 1; t <= 2; ++t) {
    adamw_update(p1.data(), g.data(), m1.data(), v1.data(), n, h, t, true);
    size_t cut = 12345;
    adamw_update(p2.data(), g.data(), m2.data(), v2.data(), cut, h, t, true);
    adamw_update(p2.data() + cut, g.data() + cut, m2.data() + cut, v2.data() + cut, n - cut, h, t, true);
  }
  CHECK(std::memcmp(p1.data(), p2.data(), n * 4) == 0);
  CHECK(std::memcmp(m1.data(), m2.data(), n * 4) == 0);
  CHECK(std::memcmp(v1.data(), v2.data(), n * 4) == 0);
}

TEST_CASE("adamw rejects a step count below 1", "[optim][adamw]") {
  float p = 1, g = 1, m = 0, v = 0;
  AdamWHyper h{1e-3f, 0.9f, 0.999f, 1e-8f, 0.f};
  CHECK_THROWS_AS(adamw_update(&p, &g, &m, &v, 1, h, 0, true), zt::Error);
}
