#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "optim/grad_clip.hpp"

using namespace zt;

TEST_CASE("clip_coefficient follows PyTorch/DeepSpeed", "[optim][clip]") {
  CHECK(clip_coefficient(0.5, 1.0) == 1.0);
  // At norm == max both PyTorch (clamp of max/(norm+1e-6)) and DeepSpeed ((norm+1e-6)/max > 1)
  // scale by max/(norm+1e-6); just below max - 1e-6 nothing is scaled.
  CHECK(clip_coefficient(1.0, 1.0) == 1.0 / (1.0 + 1e-6));
  CHECK(clip_coefficient(1.0 - 2e-6, 1.0) == 1.0);
  CHECK(clip_coefficient(4.0, 1.0) == Approx(1.0 / (4.0 + 1e-6)).epsilon(1e-15));
  CHECK(clip_coefficient(10.0, 2.5) == Approx(2.5 / (10.0 + 1e-6)).epsilon(1e-15));
  CHECK(clip_coefficient(1e6, 0.0) == 1.0);  // 0 disables clipping
  // After scaling, the global norm is max_norm (to within the 1e-6 guard).
  std::vector<float> g = {3.f, 4.f};  // norm 5
  auto norm = [&] { return std::sqrt(double(g[0]) * g[0] + double(g[1]) * g[1]); };
  double c = clip_coefficient(norm(), 1.0);
  for (float& x : g) x *= float(c);
  CHECK(norm() == Approx(1.0).epsilon(1e-6));
}
