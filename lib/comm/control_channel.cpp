#include "comm/control_channel.hpp"

#include <cmath>

namespace zt {

namespace {

// values[i] = combine over ranks r (in rank order) of rank r's values[i].
template <typename Combine>
void reduce_in_rank_order(const std::vector<double>& all, double* values, size_t n, size_t world, Combine&& combine) {
  for (size_t i = 0; i < n; ++i) {
    double x = all[i];
    for (size_t r = 1; r < world; ++r) x = combine(x, all[r * n + i]);
    values[i] = x;
  }
}

}  // namespace

void ControlChannel::all_reduce_sum(double* values, size_t n) {
  if (n == 0) return;
  const size_t W = size_t(world_size());
  std::vector<double> all(W * n);
  gather_for_reduce(values, all.data(), n * sizeof(double));
  reduce_in_rank_order(all, values, n, W, [](double a, double b) { return a + b; });
}

void ControlChannel::all_reduce_max(double* values, size_t n) {
  if (n == 0) return;
  const size_t W = size_t(world_size());
  std::vector<double> all(W * n);
  gather_for_reduce(values, all.data(), n * sizeof(double));
  // NaN anywhere wins: a NaN flag must reach every rank.
  reduce_in_rank_order(all, values, n, W,
                       [](double a, double b) { return !std::isnan(a) && (std::isnan(b) || b > a) ? b : a; });
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
