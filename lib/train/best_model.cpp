#include "train/best_model.hpp"

#include <fmt/format.h>

#include <cmath>

namespace zt {

BestModel::BestModel(const config::TrainingConfig& t)
    : enabled_(t.tracks_best()), greater_(t.greater_is_better), patience_(t.early_stopping_patience),
      threshold_(t.early_stopping_threshold), metric_(t.metric_for_best_model) {}

BestModel::Verdict BestModel::evaluated(int64_t step, double metric) {
  Verdict v;
  if (!enabled_) return v;
  // EarlyStoppingCallback compares with the best before this evaluation.
  if (!best_step_ || (better(metric, best_metric_) && std::abs(metric - best_metric_) > threshold_))
    without_improvement_ = 0;
  else
    ++without_improvement_;
  if (!std::isnan(metric) && (!best_step_ || better(metric, best_metric_))) {
    best_step_ = step;
    best_metric_ = metric;
    v.new_best = true;
  }
  v.stop = patience_ > 0 && without_improvement_ >= patience_;
  return v;
}

std::string BestModel::describe_best() const {
  return best_step_ ? fmt::format("{} {:.4f} at step {}", metric_, best_metric_, *best_step_) : "";
}

std::string BestModel::early_stop_reason() const {
  return fmt::format("{} did not improve by more than {:g} for {} evaluation{} (training.early_stopping_patience {})",
                     metric_, threshold_, without_improvement_, without_improvement_ == 1 ? "" : "s", patience_);
}

}  // namespace zt
