// The best model and early stopping decided as the Hugging Face Trainer and transformers'
// EarlyStoppingCallback decide them, evaluation by evaluation.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "train/best_model.hpp"

using namespace zt;

namespace {

config::TrainingConfig best_by_loss(int64_t patience, double threshold) {
  config::TrainingConfig t;
  t.metric_for_best_model = "eval_loss";
  t.early_stopping_patience = patience;
  t.early_stopping_threshold = threshold;
  return t;
}

}  // namespace

TEST_CASE("a new best is lower than every earlier evaluation; NaN never is", "[best]") {
  BestModel best(best_by_loss(0, 0.0));
  CHECK(best.evaluated(10, 3.0).new_best);
  CHECK_FALSE(best.evaluated(20, 3.0).new_best);  // equal is no better
  CHECK(best.evaluated(30, 2.5).new_best);
  CHECK_FALSE(best.evaluated(40, NAN).new_best);
  CHECK_FALSE(best.evaluated(50, 2.7).new_best);
  CHECK(best.best_step() == 30);
  CHECK(best.describe_best() == "eval_loss 2.5000 at step 30");
  CHECK_FALSE(best.evaluated(60, 9.0).stop);  // no patience: never stops
}

TEST_CASE("greater_is_better: a greater metric is the best", "[best]") {
  config::TrainingConfig t = best_by_loss(0, 0.0);
  t.greater_is_better = true;
  BestModel best(t);
  best.evaluated(1, 1.0);
  CHECK(best.evaluated(2, 2.0).new_best);
  CHECK_FALSE(best.evaluated(3, 1.5).new_best);
}

TEST_CASE("early stopping counts evaluations that do not beat the best before them by more than the threshold",
          "[best]") {
  BestModel best(best_by_loss(2, 0.1));
  CHECK_FALSE(best.evaluated(1, 3.0).stop);
  // A new best, but by no more than the threshold: it counts (the best moves all the same).
  const BestModel::Verdict small = best.evaluated(2, 2.95);
  CHECK(small.new_best);
  CHECK_FALSE(small.stop);
  CHECK(best.evaluations_without_improvement() == 1);
  CHECK(best.evaluated(3, 2.99).stop);  // the second in a row
  CHECK(best.early_stop_reason() ==
        "eval_loss did not improve by more than 0.1 for 2 evaluations (training.early_stopping_patience 2)");

  BestModel reset(best_by_loss(2, 0.0));
  reset.evaluated(1, 3.0);
  reset.evaluated(2, 3.1);                   // 1
  CHECK_FALSE(reset.evaluated(3, 2.0).stop);  // an improvement resets the count
  CHECK(reset.evaluations_without_improvement() == 0);
  CHECK_FALSE(reset.evaluated(4, 2.0).stop);
  CHECK(reset.evaluated(5, 2.5).stop);
}
