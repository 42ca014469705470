// The scheduler block: DeepSpeed's schedules (lr_schedules.py) with their defaults; "auto"
// warmup and total steps from the training block.
#include <fmt/format.h>

#include <algorithm>

#include "config/blocks.hpp"
#include "config/schedule_kwargs.hpp"

namespace zt::config {

namespace {

// DeepSpeed's warmup divides by log(warmup_num_steps) and clamps it to at least 2.
int64_t read_warmup_steps(Block& p, const AutoValues& av) {
  return std::max<int64_t>(2, p.integer("warmup_num_steps", 1000, IntRange::at_least(0), av.warmup_num_steps));
}

int64_t read_total_steps(Block& p, const AutoValues& av, const std::string& type, int64_t warmup) {
  auto total = p.optional_integer("total_num_steps", IntRange::at_least(1), av.total_num_steps);
  if (!total) p.fail("total_num_steps", fmt::format("missing (required by {}; \"auto\" takes training.steps)", type));
  if (*total < warmup)
    p.warn("total_num_steps", fmt::format("{} is less than warmup_num_steps {}: the schedule never leaves warmup",
                                          *total, warmup));
  return *total;
}

void read_warmup_lr(Block& p, const AutoValues& av, double optimizer_lr, LrScheduleConfig& s) {
  s.warmup_min_lr = p.number("warmup_min_lr", 0.0, NumberRange::non_negative(), av.warmup_min_lr);
  s.warmup_max_lr = p.number("warmup_max_lr", optimizer_lr, NumberRange::non_negative(), av.lr);
  s.warmup_num_steps = read_warmup_steps(p, av);
  s.warmup_type = p.choice("warmup_type", "log", {"log", "linear"});
}

void read_one_cycle(Block& p, LrScheduleConfig& s) {
  const auto non_negative = NumberRange::non_negative();
  auto min_lr = p.optional_number("cycle_min_lr", non_negative);
  auto max_lr = p.optional_number("cycle_max_lr", non_negative);
  if (!min_lr) p.fail("cycle_min_lr", "missing (required by OneCycle)");
  if (!max_lr) p.fail("cycle_max_lr", "missing (required by OneCycle)");
  s.cycle_min_lr = *min_lr;
  s.cycle_max_lr = *max_lr;
  s.decay_lr_rate = p.number("decay_lr_rate", 0.0, non_negative);
  s.cycle_first_step_size = p.integer("cycle_first_step_size", 2000, IntRange::at_least(1));
  s.cycle_second_step_size = p.integer("cycle_second_step_size", -1, IntRange::at_least(1));  // null: = first
  s.cycle_first_stair_count = p.integer("cycle_first_stair_count", 0, IntRange::at_least(0));
  s.cycle_second_stair_count = p.integer("cycle_second_stair_count", -1, IntRange::at_least(0));
  s.decay_step_size = p.integer("decay_step_size", 0, IntRange::at_least(0));
  s.cycle_momentum = p.boolean("cycle_momentum", true);
  s.cycle_min_mom = p.number("cycle_min_mom", 0.8, NumberRange::unit_half_open());
  s.cycle_max_mom = p.number("cycle_max_mom", 0.9, NumberRange::unit_half_open());
  s.decay_mom_rate = p.number("decay_mom_rate", 0.0, non_negative);
}

void read_range_test(Block& p, LrScheduleConfig& s) {
  s.lr_range_test_min_lr = p.number("lr_range_test_min_lr", 1e-3, NumberRange::positive());
  s.lr_range_test_step_size = p.integer("lr_range_test_step_size", 2000, IntRange::at_least(1));
  s.lr_range_test_step_rate = p.number("lr_range_test_step_rate", 1.0, NumberRange::non_negative());
  s.lr_range_test_staircase = p.boolean("lr_range_test_staircase", false);
}

}  // namespace

LrScheduleConfig read_scheduler(Block& top, const AutoValues& av, const TrainingConfig& training,
                                double optimizer_lr) {
  LrScheduleConfig s;
  if (!top.raw("scheduler")) {
    // No block (or null): as the Hugging Face Trainer, which makes its own schedule when the
    // DeepSpeed config has none (its lr_scheduler_type, linear by default: linear warmup, then
    // linear decay to 0 at the last step). Its constant is the optimizer's lr, type "".
    if (training.lr_scheduler_type == "constant") return s;
    s.type = training.lr_scheduler_type;
    s.warmup_min_lr = 0.0;
    s.warmup_max_lr = optimizer_lr;
    s.warmup_num_steps = av.warmup_num_steps;
    s.warmup_type = "linear";
    s.total_num_steps = av.total_num_steps;
    apply_schedule_kwargs(training.lr_scheduler_kwargs, optimizer_lr, s, top.diagnostics());
    return s;
  }
  Block b = top.child("scheduler", UnknownKeys::Error);
  if (!b.present("type"))
    b.fail("type", "missing (expected WarmupLR, WarmupDecayLR, WarmupCosineLR, OneCycle or LRRangeTest)");
  s.type = b.choice("type", "", {"WarmupLR", "WarmupDecayLR", "WarmupCosineLR", "OneCycle", "LRRangeTest"});
  Block p = b.child("params", UnknownKeys::Error);
  p.unimplemented("last_batch_iteration", -1);
  if (s.type == "WarmupLR") {
    read_warmup_lr(p, av, optimizer_lr, s);
  } else if (s.type == "WarmupDecayLR") {
    read_warmup_lr(p, av, optimizer_lr, s);
    s.total_num_steps = read_total_steps(p, av, s.type, s.warmup_num_steps);
  } else if (s.type == "WarmupCosineLR") {
    s.warmup_min_ratio = p.number("warmup_min_ratio", 0.0, NumberRange::unit());
    s.cos_min_ratio = p.number("cos_min_ratio", 1e-4, NumberRange::unit());
    s.warmup_num_steps = read_warmup_steps(p, av);
    s.warmup_type = p.choice("warmup_type", "log", {"log", "linear"});
    s.total_num_steps = read_total_steps(p, av, s.type, s.warmup_num_steps);
  } else if (s.type == "OneCycle") {
    read_one_cycle(p, s);
  } else {
    read_range_test(p, s);
  }
  p.finish();
  b.finish();
  return s;
}

}  // namespace zt::config
