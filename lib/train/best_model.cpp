#include "train/best_model.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

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

void BestModel::restore(int64_t step, double metric) {
  if (!enabled_ || std::isnan(metric) || (best_step_ && !better(metric, best_metric_))) return;
  best_step_ = step;
  best_metric_ = metric;
}

std::vector<std::pair<int64_t, double>> recorded_evaluations(const std::string& metrics_path, int64_t up_to) {
  std::map<int64_t, double> by_step;
  std::ifstream in(metrics_path);
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!record.is_object() || record.value("event", "") != "eval") continue;
    const auto step = record.find("step"), loss = record.find("val_loss");
    if (step == record.end() || loss == record.end() || !step->is_number_integer() || !loss->is_number()) continue;
    if (step->get<int64_t>() <= up_to) by_step[step->get<int64_t>()] = loss->get<double>();
  }
  return {by_step.begin(), by_step.end()};
}

std::string BestModel::describe_best() const {
  return best_step_ ? fmt::format("{} {:.4f} at step {}", metric_, best_metric_, *best_step_) : "";
}

std::string BestModel::early_stop_reason() const {
  return fmt::format("{} did not improve by more than {:g} for {} evaluation{} (training.early_stopping_patience {})",
                     metric_, threshold_, without_improvement_, without_improvement_ == 1 ? "" : "s", patience_);
}

}  // namespace zt
