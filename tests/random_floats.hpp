#pragma once
// Normally distributed test inputs, the same for a seed on every machine (mt19937 is specified).
#include <cstddef>
#include <random>
#include <vector>

namespace zt::test {

inline std::vector<float> random_floats(size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.f, scale);
  std::vector<float> x(n);
  for (float& f : x) f = normal(gen);
  return x;
}

}  // namespace zt::test
