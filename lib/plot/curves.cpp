#include "plot/curves.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "core/error.hpp"
#include "plot/chart.hpp"
#include "plot/svg.hpp"

namespace zt::plot {

namespace {

// Colours that stay apart for the usual handful of runs, and on paper.
constexpr const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                    "#9467bd", "#8c564b", "#e377c2", "#17becf"};
constexpr double kWidth = 960, kHeader = 40, kChartW = 480, kChartH = 320;

std::string colour(size_t run) { return kPalette[run % std::size(kPalette)]; }

// Runs are named by their file names; where two share one, by their paths.
std::vector<std::string> legend_names(const std::vector<RunCurves>& runs) {
  std::map<std::string, int> uses;
  for (const auto& r : runs) ++uses[r.label];
  std::vector<std::string> names;
  for (const auto& r : runs) names.push_back(uses[r.label] > 1 ? r.path : r.label);
  return names;
}

void draw_legend(Svg& svg, const std::vector<std::string>& names, bool any_val) {
  double x = 16;
  const double y = 24;
  for (size_t i = 0; i < names.size(); ++i) {
    svg.line(x, y - 4, x + 24, y - 4, colour(i), 2.5);
    svg.text(x + 30, y, names[i], "start", 12);
    x += 30 + 7.5 * double(names[i].size()) + 24;
  }
  // What the two line styles of the loss chart mean.
  double k = kWidth - (any_val ? 190 : 90);
  svg.line(k, y - 4, k + 24, y - 4, "#555555", 1.6);
  svg.text(k + 30, y, "train", "start", 12);
  if (any_val) {
    svg.line(k + 80, y - 4, k + 104, y - 4, "#555555", 1.6, "6 4");
    svg.text(k + 110, y, "val (eval)", "start", 12);
  }
}

}  // namespace

std::string curves_svg(const std::vector<RunCurves>& runs) {
  const auto names = legend_names(runs);
  Chart loss{"loss", "step", "loss (nats per token)", {}, false};
  Chart lr{"learning rate", "step", "lr", {}, true};
  Chart norm{"gradient norm", "step", "global L2 norm", {}, true};
  Chart speed{"throughput", "step", "tokens/s (all ranks)", {}, true};
  // Preference training: a third row, the chosen answer's reward against the rejected one's.
  Chart accuracy{"preference accuracy", "step", "rewards/accuracies", {}, true};
  Chart margin{"reward margin", "step", "rewards/margins", {}, false};
  // ORPO: a fourth row, its NLL term and its log σ of the log-odds ratio.
  Chart nll{"ORPO NLL of the chosen", "step", "nll_loss", {}, false};
  Chart log_odds{"ORPO log odds ratio", "step", "log_odds_ratio", {}, false};
  bool any_val = false, any_preference = false, any_orpo = false;
  // A series and its evaluations (dashed, with markers) on one chart.
  auto add = [&](Chart& chart, const std::string& run, const std::string& what, const std::string& c,
                 const std::vector<Point>& train, const std::vector<Point>& val) {
    chart.series.push_back({run + ": train " + what, c, train});
    if (!val.empty()) {
      chart.series.push_back({run + ": val " + what, c, val, true, true});
      any_val = true;
    }
  };
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    const std::string c = colour(i), n = names[i];
    add(loss, n, "loss", c, r.loss, r.val_loss);
    lr.series.push_back({n + ": learning rate", c, r.lr});
    norm.series.push_back({n + ": gradient norm", c, r.grad_norm});
    speed.series.push_back({n + ": tokens/s", c, r.tokens_per_s});
    if (r.accuracies.empty() && r.val_accuracies.empty()) continue;
    any_preference = true;
    add(accuracy, n, "rewards/accuracies", c, r.accuracies, r.val_accuracies);
    add(margin, n, "rewards/margins", c, r.margins, r.val_margins);
    if (r.log_odds.empty() && r.val_log_odds.empty()) continue;
    any_orpo = true;
    add(nll, n, "nll_loss", c, r.nll, r.val_nll);
    add(log_odds, n, "log_odds_ratio", c, r.log_odds, r.val_log_odds);
  }
  Svg svg(kWidth, kHeader + (any_orpo ? 4 : any_preference ? 3 : 2) * kChartH);
  draw_legend(svg, names, any_val);
  draw_chart(svg, loss, {0, kHeader, kChartW, kChartH});
  draw_chart(svg, lr, {kChartW, kHeader, kChartW, kChartH});
  draw_chart(svg, norm, {0, kHeader + kChartH, kChartW, kChartH});
  draw_chart(svg, speed, {kChartW, kHeader + kChartH, kChartW, kChartH});
  if (any_preference) {
    draw_chart(svg, accuracy, {0, kHeader + 2 * kChartH, kChartW, kChartH});
    draw_chart(svg, margin, {kChartW, kHeader + 2 * kChartH, kChartW, kChartH});
  }
  if (any_orpo) {
    draw_chart(svg, nll, {0, kHeader + 3 * kChartH, kChartW, kChartH});
    draw_chart(svg, log_odds, {kChartW, kHeader + 3 * kChartH, kChartW, kChartH});
  }
  return svg.finish();
}

void plot_metrics_files(const std::vector<std::string>& metrics_files, const std::string& out) {
  std::error_code ec;
  for (const auto& f : metrics_files)
    if (std::filesystem::equivalent(f, out, ec))
      fail("{}: is one of the metrics files read; writing the SVG there would destroy it (give another -o)", out);
  std::vector<RunCurves> runs;
  for (const auto& f : metrics_files) runs.push_back(read_run_curves(f));
  const std::string svg = curves_svg(runs);
  std::ofstream file(out, std::ios::out | std::ios::trunc);
  if (!file) fail("{}: cannot open for writing: {}", out, std::strerror(errno));
  file << svg;
  file.close();
  if (!file) fail("{}: write failed: {}", out, std::strerror(errno));
}

}  // namespace zt::plot
