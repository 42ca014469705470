#include "kernels/cpu/swiglu.hpp"

#include <array>

#include "check.hpp"

using namespace zt::cpu;
using namespace zt::test;

namespace {

// out[n, i] = silu(gate[n, i]) · up[n, i], inp rows [gate (F) | up (F)]
VecD swiglu_ref(const VecD& inp, int N, int F) {
  VecD out(size_t(N) * F);
  for (int n = 0; n < N; n++)
    for (int i = 0; i < F; i++) {
      const double g = inp[size_t(n) * 2 * F + i], u = inp[size_t(n) * 2 * F + F + i];
      out[size_t(n) * F + i] = g / (1.0 + std::exp(-g)) * u;
    }
  return out;
}

}  // namespace

TEST_CASE("swiglu_forward matches silu(gate) · up in double", "[kernels][swiglu]") {
  for (auto [N, F] : {std::pair{1, 1}, std::pair{3, 17}, std::pair{4, 300}}) {
    INFO("N=" << N << " F=" << F);
    Vec inp = random_vec(size_t(N) * 2 * F, 81, 3.0f);
    // Saturated gates and exact zero, among ordinary values.
    if (F > 5)
      for (int i = 0; i < 5; i++) inp[size_t(i)] = std::array{0.0f, 30.0f, -30.0f, 100.0f, -100.0f}[size_t(i)];
    Vec out(size_t(N) * F);
    swiglu_forward(out.data(), inp.data(), N, F);
    require_close(out, swiglu_ref(to_double(inp), N, F), 2e-6, 2e-7);
  }
}

TEST_CASE("swiglu_backward accumulates finite-difference gradients", "[kernels][swiglu]") {
  for (auto [N, F] : {std::pair{3, 17}, std::pair{2, 40}}) {
    INFO("N=" << N << " F=" << F);
    Vec inp = random_vec(size_t(N) * 2 * F, 91, 2.5f), dy = random_vec(size_t(N) * F, 92);
    Vec dx0 = random_vec(inp.size(), 93), dx = dx0;
    swiglu_backward(dx.data(), inp.data(), dy.data(), N, F);
    auto g = numeric_grad([&](const VecD& v) { return swiglu_ref(v, N, F); }, to_double(inp), to_double(dy));
    require_close(dx, plus(dx0, g), 1e-5, 2e-6);
  }
}

TEST_CASE("swiglu writes no subnormal numbers", "[kernels][swiglu]") {
  Vec inp;
  for (float v = -100.0f; v <= 100.0f; v += 0.0137f) inp.push_back(v);
  const int F = int(inp.size());
  inp.resize(2 * inp.size(), 1.0f);  // up = 1
  Vec out(inp.size() / 2), dx(inp.size(), 0.0f), dy(inp.size() / 2, 1.0f);
  swiglu_forward(out.data(), inp.data(), 1, F);
  swiglu_backward(dx.data(), inp.data(), dy.data(), 1, F);
  for (float v : out) REQUIRE(std::fpclassify(v) != FP_SUBNORMAL);
  for (float v : dx) REQUIRE(std::fpclassify(v) != FP_SUBNORMAL);
}
