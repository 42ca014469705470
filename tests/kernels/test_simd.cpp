#include "kernels/cpu/simd.hpp"

#include "check.hpp"

using zt::cpu::exp_fast;

TEST_CASE("exp_fast is within a few ulp of exp over the float range", "[kernels][exp]") {
  double worst = 0;
  for (double x = -87.0; x <= 88.0; x += 0.00731) {
    const float xf = float(x);
    const double want = std::exp(double(xf));
    const double rel = std::abs(double(exp_fast(xf)) - want) / want;
    worst = std::max(worst, rel);
  }
  INFO("worst relative error " << worst);
  REQUIRE(worst < 3 * 5.96e-8);  // 3 ulp at 2^-24 relative
  REQUIRE(exp_fast(0.0f) == 1.0f);
}

TEST_CASE("exp_fast saturates instead of overflowing", "[kernels][exp]") {
  for (float x : {88.5f, 100.0f, 1e30f, INFINITY}) {
    INFO("x = " << x);
    REQUIRE(std::isfinite(exp_fast(x)));
    REQUIRE(exp_fast(x) > 1e38f);
  }
  for (float x : {-88.0f, -1000.0f, -INFINITY}) {
    INFO("x = " << x);
    REQUIRE(exp_fast(x) >= 0.0f);
    REQUIRE(exp_fast(x) < 2e-38f);
  }
}

TEST_CASE("partial vector loads fill the missing lanes and stores write only n", "[kernels][simd]") {
  using namespace zt::cpu;
  float src[5] = {1, 2, 3, 4, 5};
  const f32x16 v = load_partial(src, 5, -7.0f);
  for (int i = 0; i < kLanes; i++) REQUIRE(v[i] == (i < 5 ? src[i] : -7.0f));
  float dst[kLanes];
  for (float& d : dst) d = 99.0f;
  store_partial(dst, splat(3.0f), 4);
  for (int i = 0; i < kLanes; i++) REQUIRE(dst[i] == (i < 4 ? 3.0f : 99.0f));
  REQUIRE(hsum(v) == 15.0f - 7.0f * 11);
  REQUIRE(hmax(v) == 5.0f);
}
