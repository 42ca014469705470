#pragma once
// The curves of one run, read from its metrics file (JSON Lines, docs/metrics.md): train loss,
// learning rate, gradient norm and throughput of each step record, val loss of each eval record;
// preference training's reward accuracy and margin of each step and eval record that has them, and
// ORPO's nll_loss and log_odds_ratio.
#include <string>
#include <vector>

#include "plot/chart.hpp"

namespace zt::plot {

struct RunCurves {
  std::string path;
  std::string label;  // the legend's name for the run: the file name without .jsonl
  std::vector<Point> loss, val_loss, lr, grad_norm, tokens_per_s;
  std::vector<Point> accuracies, val_accuracies, margins, val_margins;  // rewards/accuracies, rewards/margins
  std::vector<Point> nll, val_nll, log_odds, val_log_odds;                // nll_loss, log_odds_ratio (ORPO)
};

// Throws zt::Error naming the file (and the line) for a file that cannot be read, a line that is
// not a JSON object, a record whose fields have the wrong type, or a file without step records.
RunCurves read_run_curves(const std::string& path);

}  // namespace zt::plot
