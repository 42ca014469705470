// DeepSpeed's schedules (deepspeed/runtime/lr_schedules.py) as pure functions.
//
// Iteration convention: the step that follows `steps_taken` successful steps is evaluated at
// DeepSpeed's last_batch_iteration = steps_taken for WarmupLR, WarmupDecayLR and WarmupCosineLR
// (so the first step runs at iteration 0: warmup_min_lr, or warmup_min_ratio * lr), and at
// last_batch_iteration = steps_taken - 1 for OneCycle and LRRangeTest, whose formulas look one
// batch ahead (batch_iteration = last_batch_iteration + 1) and whose constructors set the lr of
// the first step to that of batch_iteration 0 (cycle_min_lr, lr_range_test_min_lr).
#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/error.hpp"
#include "optim/lr_schedule.hpp"
#include "optim/trainer_schedules.hpp"

namespace zt {

namespace {

int64_t warmup_steps_of(const LrScheduleConfig& c) { return std::max<int64_t>(2, c.warmup_num_steps); }

// Warmup progress in [0, 1) for iteration `it` < warmup steps: log(it+1)/log(N) or it/N.
double warmup_gamma(const LrScheduleConfig& c, int64_t it) {
  const int64_t n = warmup_steps_of(c);
  if (c.warmup_type == "log") return 1.0 / std::log(double(n)) * std::log(double(it + 1));
  if (c.warmup_type == "linear") return double(it) / double(n);
  fail("scheduler.params.warmup_type: unknown value \"{}\" (expected log or linear)", c.warmup_type);
}

double warmup_lr(const LrScheduleConfig& c, int64_t it) {
  double gamma = it < warmup_steps_of(c) ? warmup_gamma(c, it) : 1.0;
  return c.warmup_min_lr + (c.warmup_max_lr - c.warmup_min_lr) * gamma;
}

double warmup_decay_lr(const LrScheduleConfig& c, int64_t it) {
  const int64_t n = warmup_steps_of(c);
  double gamma;
  if (it < n) {
    gamma = warmup_gamma(c, it);
  } else {
    gamma = std::max(0.0, double(c.total_num_steps - it) /
                              std::max(1.0, double(c.total_num_steps - n)));
  }
  return c.warmup_min_lr + (c.warmup_max_lr - c.warmup_min_lr) * gamma;
}

double warmup_cosine_ratio(const LrScheduleConfig& c, int64_t it) {
  const int64_t n = warmup_steps_of(c);
  if (it < n) return c.warmup_min_ratio + warmup_gamma(c, it) * (1.0 - c.warmup_min_ratio);
  const double real_last_step = double(it - n + 1);
  const double real_total_steps = double(c.total_num_steps - n);
  // DeepSpeed divides by zero here; a schedule without a decay phase sits at its end value.
  if (real_total_steps <= 0) return std::max(0.0, c.cos_min_ratio);
  double ratio = (1.0 + std::cos(std::numbers::pi * real_last_step / real_total_steps)) / 2.0;
  return std::max(0.0, c.cos_min_ratio + (1.0 - c.cos_min_ratio) * ratio);
}

// OneCycle's geometry. Stair counts are accepted but, as in DeepSpeed, do not shape the cycle.
struct OneCycleShape {
  double total_size, step_ratio;
  explicit OneCycleShape(const LrScheduleConfig& c) {
    double first = double(c.cycle_first_step_size);
    double second = c.cycle_second_step_size < 0 ? first : double(c.cycle_second_step_size);
    total_size = first + second;
    if (!(total_size > 0)) fail("scheduler.params.cycle_first_step_size: the cycle must have a positive length");
    step_ratio = first / total_size;
  }
  bool in_cycle(int64_t steps_taken) const { return double(steps_taken - 1) < total_size; }
  // Position in the cycle: 0 at both ends, 1 at the peak.
  double scale_factor(int64_t steps_taken) const {
    const double batch_iteration = double(steps_taken);
    const double cycle = std::floor(1.0 + batch_iteration / total_size);
    const double x = 1.0 + batch_iteration / total_size - cycle;
    return x <= step_ratio ? x / step_ratio : (x - 1.0) / (step_ratio - 1.0);
  }
  // Steps since the cycle ended (DeepSpeed's decay_batch_iteration).
  double decay_iteration(int64_t steps_taken) const { return double(steps_taken - 1) - total_size + 1.0; }
};

double one_cycle_lr(const LrScheduleConfig& c, int64_t steps_taken) {
  OneCycleShape shape(c);
  if (shape.in_cycle(steps_taken))
    return c.cycle_min_lr + (c.cycle_max_lr - c.cycle_min_lr) * shape.scale_factor(steps_taken);
  if (c.decay_step_size == 0 || c.decay_lr_rate == 0) return c.cycle_min_lr;
  double interval = shape.decay_iteration(steps_taken) / double(c.decay_step_size);
  return c.cycle_min_lr / (1.0 + c.decay_lr_rate * interval);
}

double one_cycle_beta1(const LrScheduleConfig& c, int64_t steps_taken) {
  // DeepSpeed sets the optimizer's momentum to cycle_min_mom when the schedule is created, and
  // its first scheduler step (after the first optimizer step) moves it to the cycle's value.
  if (steps_taken == 0) return c.cycle_min_mom;
  OneCycleShape shape(c);
  if (shape.in_cycle(steps_taken))
    return c.cycle_max_mom - (c.cycle_max_mom - c.cycle_min_mom) * shape.scale_factor(steps_taken);
  if (c.decay_step_size == 0 || c.decay_mom_rate == 0) return c.cycle_max_mom;
  double interval = shape.decay_iteration(steps_taken) / double(c.decay_step_size);
  return c.cycle_max_mom * (1.0 + c.decay_mom_rate * interval);
}

double lr_range_test_lr(const LrScheduleConfig& c, int64_t steps_taken) {
  if (c.lr_range_test_step_size <= 0)
    fail("scheduler.params.lr_range_test_step_size: must be positive, got {}", c.lr_range_test_step_size);
  double interval = double(steps_taken) / double(c.lr_range_test_step_size);
  if (c.lr_range_test_staircase) interval = std::floor(interval);
  return c.lr_range_test_min_lr * (1.0 + c.lr_range_test_step_rate * interval);
}

}  // namespace

double lr_at(const LrScheduleConfig& config, double base_lr, int64_t steps_taken) {
  if (steps_taken < 0) fail("lr_at: steps_taken must be >= 0, got {}", steps_taken);
  const std::string& type = config.type;
  if (type.empty()) return base_lr;
  if (is_trainer_schedule(type)) return trainer_schedule_lr(config, steps_taken);
  if (type == "WarmupLR") return warmup_lr(config, steps_taken);
  if (type == "WarmupDecayLR") return warmup_decay_lr(config, steps_taken);
  if (type == "WarmupCosineLR") return base_lr * warmup_cosine_ratio(config, steps_taken);
  if (type == "OneCycle") return one_cycle_lr(config, steps_taken);
  if (type == "LRRangeTest") return lr_range_test_lr(config, steps_taken);
  fail("scheduler.type: unknown schedule \"{}\" (expected WarmupLR, WarmupDecayLR, WarmupCosineLR, "
       "OneCycle or LRRangeTest, or one of the Hugging Face Trainer's lr_scheduler_type)", type);
}

AdamBetas betas_at(const LrScheduleConfig& config, AdamBetas base, int64_t steps_taken) {
  if (steps_taken < 0) fail("betas_at: steps_taken must be >= 0, got {}", steps_taken);
  if (config.type == "OneCycle" && config.cycle_momentum) return {one_cycle_beta1(config, steps_taken), 0.99};
  return base;
}

}  // namespace zt
