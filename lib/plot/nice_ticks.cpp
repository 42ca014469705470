#include "plot/nice_ticks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace zt::plot {

namespace {

// The round number (1, 2 or 5 times a power of ten) nearest to `raw` (Heckbert's "nice numbers").
double nice_step(double raw) {
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  const double fraction = raw / power;
  const double nice = fraction < 1.5 ? 1.0 : fraction < 3.0 ? 2.0 : fraction < 7.0 ? 5.0 : 10.0;
  return nice * power;
}

// Decimals needed to tell apart values `step` apart.
int decimals_for(double step) { return std::max(0, int(std::ceil(-std::log10(step) - 1e-9))); }

}  // namespace

Ticks nice_ticks(double min, double max, int target) {
  if (min > max) std::swap(min, max);
  if (min == max) {  // one value: a range around it
    const double half = min == 0 ? 1.0 : std::abs(min) * 0.1;
    min -= half;
    max += half;
  }
  Ticks t;
  t.step = nice_step((max - min) / std::max(1, target));
  // Multiples of the step, so that 0 is a tick whenever the range crosses it.
  const double first = std::floor(min / t.step + 1e-9), last = std::ceil(max / t.step - 1e-9);
  for (double k = first; k <= last + 0.5; k += 1.0) {
    const double v = k * t.step;
    t.values.push_back(std::abs(v) < t.step * 1e-9 ? 0.0 : v);  // no "-0"
  }
  t.lo = t.values.front();
  t.hi = t.values.back();
  return t;
}

std::vector<std::string> tick_labels(const Ticks& t) {
  double largest = 0;
  for (double v : t.values) largest = std::max(largest, std::abs(v));
  std::vector<std::string> labels;
  for (double v : t.values) {
    if (v == 0) {
      labels.push_back("0");
    } else if (t.step < 1e-3) {  // one power of ten for the whole axis: 0.5e-4, 1.0e-4, 1.5e-4
      const int e = int(std::floor(std::log10(largest)));
      const double scale = std::pow(10.0, e);
      labels.push_back(fmt::format("{:.{}f}e{}", v / scale, decimals_for(t.step / scale), e));
    } else if (t.step >= 1e6) {
      labels.push_back(fmt::format("{:.{}f}M", v / 1e6, decimals_for(t.step / 1e6)));
    } else if (t.step >= 1e3) {
      labels.push_back(fmt::format("{:.{}f}k", v / 1e3, decimals_for(t.step / 1e3)));
    } else {
      labels.push_back(fmt::format("{:.{}f}", v, decimals_for(t.step)));
    }
  }
  return labels;
}

}  // namespace zt::plot
