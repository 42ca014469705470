#pragma once
// The central finite difference of a loss in one parameter, for the gradient checks.
#include <algorithm>
#include <cmath>

namespace zt::test {

// (loss(p + h) - loss(p - h)) / (2h) with h = 1e-2 · max(1, |p|), the difference taken between the
// fp32 values p ± h actually hold; p is left as it was.
template <typename Loss>
double central_difference(float& p, Loss&& loss_at) {
  const float saved = p;
  const float h = 1e-2f * std::max(1.0f, std::abs(saved));
  p = saved + h;
  const double up = loss_at();
  p = saved - h;
  const double down = loss_at();
  p = saved;
  return (up - down) / (double(saved + h) - double(saved - h));
}

}  // namespace zt::test
