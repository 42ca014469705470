// transformers' lr lambdas (transformers/optimization.py), operation for operation, so that the
// learning rates equal the Trainer's to the bit (tests/optim/hf_schedule_fixture.json).
#include "optim/trainer_schedules.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <numbers>

#include "core/error.hpp"

namespace zt {

namespace {

double warmup_factor(int64_t step, int64_t warmup) { return double(step) / double(std::max<int64_t>(1, warmup)); }

// Progress through the decay after warmup: 0 at its start, 1 at num_training_steps.
double decay_progress(const LrScheduleConfig& c, int64_t step) {
  return double(step - c.warmup_num_steps) / double(std::max<int64_t>(1, c.total_num_steps - c.warmup_num_steps));
}

double linear_factor(const LrScheduleConfig& c, int64_t step) {
  return std::max(0.0, double(c.total_num_steps - step) /
                           double(std::max<int64_t>(1, c.total_num_steps - c.warmup_num_steps)));
}

// cosine, and cosine_with_min_lr with its floor (min_lr_rate 0 for plain cosine).
double cosine_factor(const LrScheduleConfig& c, int64_t step) {
  const double progress = decay_progress(c, step);
  double factor = 0.5 * (1.0 + std::cos(std::numbers::pi * c.num_cycles * 2.0 * progress));
  if (c.type == "cosine_with_min_lr") factor = factor * (1 - c.min_lr_rate) + c.min_lr_rate;
  return std::max(0.0, factor);
}

double hard_restarts_factor(const LrScheduleConfig& c, int64_t step) {
  const double progress = decay_progress(c, step);
  if (progress >= 1.0) return 0.0;
  return std::max(0.0, 0.5 * (1.0 + std::cos(std::numbers::pi * std::fmod(c.num_cycles * progress, 1.0))));
}

// transformers divides by the initial lr here and LambdaLR multiplies by it again.
double polynomial_factor(const LrScheduleConfig& c, int64_t step) {
  const double lr_init = c.warmup_max_lr;
  if (step > c.total_num_steps) return c.lr_end / lr_init;
  const double lr_range = lr_init - c.lr_end;
  const int64_t decay_steps = c.total_num_steps - c.warmup_num_steps;
  const double pct_remaining = 1 - double(step - c.warmup_num_steps) / double(decay_steps);
  const double decay = lr_range * std::pow(pct_remaining, c.power) + c.lr_end;
  return decay / lr_init;
}

// The Trainer passes inverse_sqrt no kwargs: its timescale is the warmup, or 10000 without one.
int64_t inverse_sqrt_timescale(const LrScheduleConfig& c) {
  return c.warmup_num_steps > 0 ? c.warmup_num_steps : 10000;
}

double inverse_sqrt_factor(const LrScheduleConfig& c, int64_t step) {
  const int64_t timescale = inverse_sqrt_timescale(c);
  const int64_t shift = timescale - c.warmup_num_steps;
  return 1.0 / std::sqrt(double(step + shift) / double(timescale));
}

double after_warmup(const LrScheduleConfig& c, int64_t step) {
  const std::string& t = c.type;
  if (t == "linear") return linear_factor(c, step);
  if (t == "cosine" || t == "cosine_with_min_lr") return cosine_factor(c, step);
  if (t == "cosine_with_restarts") return hard_restarts_factor(c, step);
  if (t == "polynomial") return polynomial_factor(c, step);
  if (t == "constant_with_warmup") return 1.0;
  if (t == "inverse_sqrt") return inverse_sqrt_factor(c, step);
  fail("training.lr_scheduler_type: unknown schedule \"{}\"", t);
}

}  // namespace

const std::vector<std::string>& trainer_schedule_names() {
  static const std::vector<std::string> names = {"linear",   "cosine",       "cosine_with_restarts",
                                                 "polynomial", "constant",   "constant_with_warmup",
                                                 "inverse_sqrt", "cosine_with_min_lr"};
  return names;
}

bool is_trainer_schedule(const std::string& type) {
  const auto& names = trainer_schedule_names();
  return type != "constant" && std::find(names.begin(), names.end(), type) != names.end();
}

std::string describe_trainer_decay(const LrScheduleConfig& c) {
  const std::string& t = c.type;
  const int64_t end = c.total_num_steps;
  if (t == "linear") return fmt::format("down to 0 at step {}", end);
  if (t == "cosine") return fmt::format("a cosine ({:g} cycles) down to 0 at step {}", c.num_cycles, end);
  if (t == "cosine_with_min_lr")
    return fmt::format("a cosine ({:g} cycles) down to {:g} x the peak at step {}", c.num_cycles, c.min_lr_rate, end);
  if (t == "cosine_with_restarts")
    return fmt::format("{:g} cosines with hard restarts, down to 0 at step {}", c.num_cycles, end);
  if (t == "polynomial")
    return fmt::format("polynomial (power {:g}) down to lr_end {:g} at step {}", c.power, c.lr_end, end);
  if (t == "inverse_sqrt")
    return fmt::format("the inverse square root of the steps over timescale {}", inverse_sqrt_timescale(c));
  return "constant";
}

double trainer_schedule_lr(const LrScheduleConfig& c, int64_t steps_taken) {
  const double factor = steps_taken < c.warmup_num_steps ? warmup_factor(steps_taken, c.warmup_num_steps)
                                                         : after_warmup(c, steps_taken);
  return c.warmup_max_lr * factor;
}

}  // namespace zt
