#pragma once
// The best model as the Hugging Face Trainer keeps it: after each evaluation, whether the metric
// (training.metric_for_best_model, the validation loss) is a new best (greater or lower, as
// greater_is_better says, than every earlier one), and transformers' EarlyStoppingCallback: an
// evaluation that does not improve on the best before it by more than early_stopping_threshold
// counts, one that does resets the count, and early_stopping_patience of them in a row end the run.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/config.hpp"

namespace zt {

class BestModel {
public:
  explicit BestModel(const config::TrainingConfig& training);

  struct Verdict {
    bool new_best = false;
    bool stop = false;  // early stopping ends the run after this evaluation
  };
  // The evaluation of `step` gave `metric` (NaN is never a best and never an improvement).
  Verdict evaluated(int64_t step, double metric);

  // A resumed run's best so far, as the Trainer reads it back from its trainer_state.json: the
  // evaluation of `step` counts for the best, and the early-stopping count starts afresh (the
  // Trainer restores its callbacks' state only when asked).
  void restore(int64_t step, double metric);

  bool enabled() const { return enabled_; }
  std::optional<int64_t> best_step() const { return best_step_; }
  double best_metric() const { return best_metric_; }
  int64_t evaluations_without_improvement() const { return without_improvement_; }
  // "eval_loss 2.3125 at step 20"; "" before the first best.
  std::string describe_best() const;
  // Why early stopping ended the run: "eval_loss did not improve by more than 0 for 3 evaluations
  // (training.early_stopping_patience 3)".
  std::string early_stop_reason() const;

private:
  bool better(double metric, double than) const { return greater_ ? metric > than : metric < than; }

  bool enabled_;
  bool greater_;
  int64_t patience_;
  double threshold_;
  std::string metric_;
  std::optional<int64_t> best_step_;
  double best_metric_ = 0;
  int64_t without_improvement_ = 0;
};

// The evaluations up to `up_to` that a metrics file (training.metrics) records, by step, the last
// record of each step (a resumed run's file holds the steps it redid once more); none for a file
// that cannot be read. Lines that are no eval record are passed over.
std::vector<std::pair<int64_t, double>> recorded_evaluations(const std::string& metrics_path, int64_t up_to);

}  // namespace zt
