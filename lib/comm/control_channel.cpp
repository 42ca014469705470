#include "comm/control_channel.hpp"

#include <cmath>

namespace zt {

void ControlChannel::all_reduce_sum(double* values, size_t n) {
  const size_t W = size_t(world_size());
  if (n == 0) return;
  std::vector<double> all(W * n);
  gather_for_reduce(values, all.data(), n * sizeof(double));
  for (size_t i = 0; i < n; ++i) {
    double s = all[i];
    for (size_t r = 1; r < W; ++r) s += all[r * n + i];
    values[i] = s;
  }
}

void ControlChannel::all_reduce_max(double* values, size_t n) {
  const size_t W = size_t(world_size());
  if (n == 0) return;
  std::vector<double> all(W * n);
  gather_for_reduce(values, all.data(), n * sizeof(double));
  for (size_t i = 0; i < n; ++i) {
    double m = all[i];
    for (size_t r = 1; r < W; ++r) {
      const double x = all[r * n + i];
      if (!std::isnan(m) && (std::isnan(x) || x > m)) m = x;
    }
    values[i] = m;
  }
}

int ControlChannel::first_failure(bool failed) {
  uint8_t mine = failed ? 1 : 0;
  for (int r = 0; auto f : gather_all(mine)) {
    if (f) return r;
    ++r;
  }
  return -1;
}

}  // namespace zt
