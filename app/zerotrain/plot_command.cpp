// `zerotrain plot METRICS... -o FILE.svg`: training curves of runs.
#include <cstdio>
#include <memory>

#include "cli_options.hpp"
#include "plot/curves.hpp"
#include "subcommand.hpp"

namespace zt::cli {

namespace {

struct PlotArgs {
  std::vector<std::string> metrics;
  std::string out;
};

int plot(const PlotArgs& a) {
  try {
    plot::plot_metrics_files(a.metrics, a.out);
  } catch (const std::exception& e) {
    return usage_error("plot: " + std::string(e.what()));
  }
  std::printf("wrote %s (%zu run%s)\n", a.out.c_str(), a.metrics.size(), a.metrics.size() == 1 ? "" : "s");
  return 0;
}

}  // namespace

Subcommand plot_subcommand(CLI::App& app) {
  auto [plt, a] = add_command<PlotArgs>(
      app, "plot", "draw the training curves of metrics files (training.metrics) as one SVG",
      "Example:\n  zerotrain plot zero1.jsonl zero3.jsonl -o curves.svg\n\nLoss (train and val), learning rate, "
      "gradient norm and tokens/s against the step; several runs overlaid.\n");
  plt->add_option("METRICS", a->metrics, "metrics files, one run each")->required();
  plt->add_option("-o,--output", a->out, "the SVG file to write")->required();
  return {plt, [a = a](int, char**) { return plot(*a); }};
}

}  // namespace zt::cli
