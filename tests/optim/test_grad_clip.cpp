#include <catch2/catch.hpp>

#include <cmath>
#include <omp.h>
#include <random>
#include <vector>

#include "optim/grad_clip.hpp"

using namespace zt;

TEST_CASE("sum_of_squares is accurate and independent of the thread count", "[optim][clip]") {
  const size_t n = 300001;
  std::mt19937 gen(11);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = normal(gen) * (i % 7 == 0 ? 1e3f : 1e-3f);

  long double reference = 0;  // plain sequential sum in extended precision
  for (float f : x) reference += (long double)f * f;

  int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  double one = sum_of_squares(x.data(), n);
  omp_set_num_threads(2);
  double two = sum_of_squares(x.data(), n);
  omp_set_num_threads(saved);

  CHECK(one == two);  // bit-identical
  CHECK(std::fabs(one - double(reference)) <= 1e-12 * double(reference));
  CHECK(sum_of_squares(x.data(), 0) == 0.0);
  float three[3] = {1.f, -2.f, 2.f};
  CHECK(sum_of_squares(three, 3) == 9.0);
}

TEST_CASE("scale_in_place multiplies every element", "[optim][clip]") {
  std::vector<float> x = {1.f, -2.f, 0.5f, 8.f};
  scale_in_place(x.data(), x.size(), 0.25f);
  CHECK(x == std::vector<float>{0.25f, -0.5f, 0.125f, 2.f});
}

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
  double c = clip_coefficient(std::sqrt(sum_of_squares(g.data(), 2)), 1.0);
  scale_in_place(g.data(), 2, float(c));
  CHECK(std::sqrt(sum_of_squares(g.data(), 2)) == Approx(1.0).epsilon(1e-6));
}
