#pragma once
// One line chart in a box of an SVG: a frame, grid lines and ticks at round values, labels, and one
// <path> per series (gaps where a value is missing).
#include <cmath>
#include <string>
#include <vector>

#include "plot/svg.hpp"

namespace zt::plot {

struct Point {
  double x = 0, y = NAN;  // y NaN: no value here (the line breaks)
};

struct Series {
  std::string name;  // shown when the pointer rests on the line
  std::string color;
  std::vector<Point> points;
  bool dashed = false;
  bool markers = false;  // a dot on each point (sparse series such as evaluations)
};

struct Chart {
  std::string title, x_label = "step", y_label;
  std::vector<Series> series;
  bool y_from_zero = false;  // the y axis starts at 0 (rates, norms, learning rates)
};

struct Box {
  double x = 0, y = 0, w = 0, h = 0;
};

void draw_chart(Svg& svg, const Chart& chart, Box box);

// The path data of a series inside `plot` for the given axis ranges: "M x,y" at the start and after
// each gap, "L x,y" for every other point with a value.
std::string path_data(const std::vector<Point>& points, Box plot, double x_lo, double x_hi, double y_lo, double y_hi);

}  // namespace zt::plot
