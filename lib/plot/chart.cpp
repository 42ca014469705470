#include "plot/chart.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "plot/nice_ticks.hpp"

namespace zt::plot {

namespace {

constexpr double kLeft = 62, kRight = 14, kTop = 26, kBottom = 40;  // room for title, ticks and labels
constexpr const char* kAxis = "#333333";
constexpr const char* kGrid = "#e4e4e4";

struct Range {
  double lo = std::numeric_limits<double>::infinity(), hi = -std::numeric_limits<double>::infinity();
  bool empty() const { return lo > hi; }
  void add(double v) {
    if (!std::isfinite(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
};

double scale(double v, double lo, double hi, double from, double to) {
  return hi == lo ? from : from + (v - lo) / (hi - lo) * (to - from);
}

}  // namespace

std::string path_data(const std::vector<Point>& points, Box plot, double x_lo, double x_hi, double y_lo, double y_hi) {
  std::string d;
  bool pen_down = false;
  for (const Point& p : points) {
    if (!std::isfinite(p.y) || !std::isfinite(p.x)) {
      pen_down = false;
      continue;
    }
    const double x = scale(p.x, x_lo, x_hi, plot.x, plot.x + plot.w);
    const double y = scale(p.y, y_lo, y_hi, plot.y + plot.h, plot.y);
    d += fmt::format("{}{:.1f},{:.1f}", pen_down ? 'L' : 'M', x, y);
    pen_down = true;
  }
  return d;
}

void draw_chart(Svg& svg, const Chart& chart, Box box) {
  const Box plot{box.x + kLeft, box.y + kTop, box.w - kLeft - kRight, box.h - kTop - kBottom};
  svg.text(plot.x + plot.w / 2, box.y + 16, chart.title, "middle", 13, 0, "bold");

  Range xs, ys;
  for (const auto& s : chart.series)
    for (const auto& p : s.points)
      if (std::isfinite(p.y)) {
        xs.add(p.x);
        ys.add(p.y);
      }
  if (xs.empty()) {
    svg.rect(plot.x, plot.y, plot.w, plot.h, "none", kAxis);
    svg.text(plot.x + plot.w / 2, plot.y + plot.h / 2, "no data", "middle", 12);
    return;
  }
  if (chart.y_from_zero) ys.add(0.0);
  const Ticks xt = nice_ticks(xs.lo, xs.hi, 6), yt = nice_ticks(ys.lo, ys.hi, 5);
  const auto x_labels = tick_labels(xt), y_labels = tick_labels(yt);

  // Grid, ticks and their labels.
  for (size_t i = 0; i < yt.values.size(); ++i) {
    const double y = scale(yt.values[i], yt.lo, yt.hi, plot.y + plot.h, plot.y);
    svg.line(plot.x, y, plot.x + plot.w, y, kGrid);
    svg.line(plot.x - 4, y, plot.x, y, kAxis);
    svg.text(plot.x - 7, y + 4, y_labels[i], "end", 11);
  }
  for (size_t i = 0; i < xt.values.size(); ++i) {
    const double x = scale(xt.values[i], xt.lo, xt.hi, plot.x, plot.x + plot.w);
    svg.line(x, plot.y, x, plot.y + plot.h, kGrid);
    svg.line(x, plot.y + plot.h, x, plot.y + plot.h + 4, kAxis);
    svg.text(x, plot.y + plot.h + 17, x_labels[i], "middle", 11);
  }
  svg.line(plot.x, plot.y + plot.h, plot.x + plot.w, plot.y + plot.h, kAxis);  // x axis
  svg.line(plot.x, plot.y, plot.x, plot.y + plot.h, kAxis);                    // y axis
  svg.text(plot.x + plot.w / 2, plot.y + plot.h + 33, chart.x_label, "middle", 12);
  svg.text(box.x + 14, plot.y + plot.h / 2, chart.y_label, "middle", 12, -90);

  for (const auto& s : chart.series) {
    const std::string d = path_data(s.points, plot, xt.lo, xt.hi, yt.lo, yt.hi);
    if (d.empty()) continue;
    svg.path(d, s.color, 1.6, s.dashed ? "6 4" : "", s.name);
    if (!s.markers) continue;
    for (const auto& p : s.points)
      if (std::isfinite(p.y))
        svg.circle(scale(p.x, xt.lo, xt.hi, plot.x, plot.x + plot.w),
                   scale(p.y, yt.lo, yt.hi, plot.y + plot.h, plot.y), 3.5, s.color);
  }
}

}  // namespace zt::plot
