#include "kernels/cpu/gelu.hpp"

#include "check.hpp"

using namespace zt::cpu;
using namespace zt::test;

namespace {

VecD gelu_ref(const VecD& x) {
  VecD y(x.size());
  const double k = std::sqrt(2.0 / M_PI);
  for (size_t i = 0; i < x.size(); i++)
    y[i] = 0.5 * x[i] * (1.0 + std::tanh(k * (x[i] + 0.044715 * x[i] * x[i] * x[i])));
  return y;
}

}  // namespace

TEST_CASE("gelu_forward matches the tanh form in double", "[kernels][gelu]") {
  Vec x = random_vec(4099, 51, 3.0f);  // not a multiple of any vector width or chunk
  // Saturated tails and exact zero.
  for (float v : {0.0f, -0.0f, 1e-6f, -1e-6f, 8.0f, -8.0f, 30.0f, -30.0f, 100.0f, -100.0f}) x.push_back(v);
  Vec y(x.size());
  gelu_forward(y.data(), x.data(), x.size());
  require_close(y, gelu_ref(to_double(x)), 2e-6, 2e-7);
}

TEST_CASE("gelu_backward accumulates finite-difference gradients", "[kernels][gelu]") {
  Vec x = random_vec(1031, 52, 2.5f);
  for (float v : {0.0f, 6.0f, -6.0f, 20.0f, -20.0f}) x.push_back(v);
  Vec dy = random_vec(x.size(), 53);
  Vec dx0 = random_vec(x.size(), 54), dx = dx0;
  gelu_backward(dx.data(), x.data(), dy.data(), x.size());
  // GELU is elementwise: the gradient of Σ dy·gelu(x) at element i only involves x_i.
  VecD g(x.size());
  const double h = 1e-6;
  for (size_t i = 0; i < x.size(); i++) {
    VecD up = gelu_ref({double(x[i]) + h}), down = gelu_ref({double(x[i]) - h});
    g[i] = double(dy[i]) * (up[0] - down[0]) / (2 * h);
  }
  require_close(dx, plus(dx0, g), 1e-5, 2e-6);
}

TEST_CASE("gelu writes no subnormal numbers", "[kernels][gelu]") {
  // Subnormal values cost microcode assists in every later kernel that reads them.
  Vec x;
  for (float v = -100.0f; v <= 100.0f; v += 0.0137f) x.push_back(v);
  for (float v : {1e-30f, -1e-30f, 1e-38f, -1e-38f}) x.push_back(v);
  Vec y(x.size()), dx(x.size(), 0.0f), dy(x.size(), 1.0f);
  gelu_forward(y.data(), x.data(), x.size());
  gelu_backward(dx.data(), x.data(), dy.data(), x.size());
  for (size_t i = 0; i < x.size(); i++) {
    INFO("x = " << x[i] << ": gelu " << y[i] << ", gelu' " << dx[i]);
    // a subnormal input may pass through as itself (gelu(x) ~ x/2 near 0); nothing else may appear
    if (std::fpclassify(x[i]) != FP_SUBNORMAL) {
      REQUIRE(std::fpclassify(y[i]) != FP_SUBNORMAL);
      REQUIRE(std::fpclassify(dx[i]) != FP_SUBNORMAL);
    }
  }
}
