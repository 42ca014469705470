#pragma once
// Helpers for kernel tests: random inputs, double-precision copies, finite differences, and
// comparisons of fp32 results against double references.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/rng.hpp"

namespace zt::test {

using Vec = std::vector<float>;
using VecD = std::vector<double>;

inline Vec random_vec(size_t n, uint64_t seed, float scale = 1.0f) {
  Rng rng(seed);
  Vec v(n);
  for (auto& x : v) x = float(rng.normal()) * scale;
  return v;
}

inline VecD to_double(const Vec& v) { return VecD(v.begin(), v.end()); }

// ||got - want|| / ||want||: the error relative to the size of the whole tensor.
inline double relative_error(const Vec& got, const VecD& want) {
  REQUIRE(got.size() == want.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); i++) {
    num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    den += want[i] * want[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// Every element within atol + rtol·|want|, and the whole tensor within rtol in norm.
inline void require_close(const Vec& got, const VecD& want, double rtol, double atol) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); i++) {
    INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
    REQUIRE(std::isfinite(got[i]));
    REQUIRE(std::abs(double(got[i]) - want[i]) <= atol + rtol * std::abs(want[i]));
  }
  REQUIRE(relative_error(got, want) <= rtol);
}

// Gradient of L(x) = Σ_i w_i · f(x)_i by central differences, all in double.
inline VecD numeric_grad(const std::function<VecD(const VecD&)>& f, VecD x, const VecD& w, double h = 1e-6) {
  VecD g(x.size());
  for (size_t i = 0; i < x.size(); i++) {
    const double saved = x[i];
    x[i] = saved + h;
    VecD up = f(x);
    x[i] = saved - h;
    VecD down = f(x);
    x[i] = saved;
    double d = 0;
    for (size_t j = 0; j < w.size(); j++) d += w[j] * (up[j] - down[j]);
    g[i] = d / (2 * h);
  }
  return g;
}

// base + g: what an accumulating kernel should leave in a buffer that held base.
inline VecD plus(const Vec& base, const VecD& g) {
  REQUIRE(base.size() == g.size());
  VecD r(g.size());
  for (size_t i = 0; i < g.size(); i++) r[i] = double(base[i]) + g[i];
  return r;
}

}  // namespace zt::test
