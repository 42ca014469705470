#pragma once
// Wall-clock intervals for logs and metrics.
#include <chrono>

namespace zt {

using SteadyClock = std::chrono::steady_clock;

inline double seconds_since(SteadyClock::time_point t0) {
  return std::chrono::duration<double>(SteadyClock::now() - t0).count();
}

// Runs f and adds its duration in seconds to total.
template <typename F>
void timed(double& total, F&& f) {
  auto t0 = SteadyClock::now();
  f();
  total += seconds_since(t0);
}

}  // namespace zt
