#pragma once
// Axis ticks at round values (1, 2 or 5 times a power of ten) that cover a data range, and their
// labels, all written with the same number of decimals (or the same power of ten).
#include <string>
#include <vector>

namespace zt::plot {

struct Ticks {
  double lo = 0, hi = 1;  // the axis range: the first and last tick
  double step = 1;
  std::vector<double> values;  // lo, lo + step, ..., hi
};

// About `target` intervals covering [min, max]. An empty range (min == max) is widened around the value.
Ticks nice_ticks(double min, double max, int target = 5);

// The label of every tick of `ticks`: "0.25", "1500", "40k", "2.5e-4".
std::vector<std::string> tick_labels(const Ticks& ticks);

}  // namespace zt::plot
