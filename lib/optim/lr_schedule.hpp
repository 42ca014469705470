#pragma once
// DeepSpeed's learning-rate schedules (deepspeed/runtime/lr_schedules.py), as pure functions of
// the number of optimizer steps already taken.
#include <cstdint>
#include <string>

namespace zt {

struct LrScheduleConfig {
  // "" (constant lr), WarmupLR, WarmupDecayLR, WarmupCosineLR, OneCycle, LRRangeTest, or linear: the
  // Hugging Face Trainer's default (get_linear_schedule_with_warmup), which zerotrain runs when a
  // config has no scheduler block.
  std::string type;
  // WarmupLR / WarmupDecayLR; linear uses warmup_max_lr, warmup_num_steps and total_num_steps
  double warmup_min_lr = 0.0;
  double warmup_max_lr = 1e-3;
  int64_t warmup_num_steps = 1000;
  std::string warmup_type = "log";  // log | linear
  int64_t total_num_steps = 0;      // WarmupDecayLR, WarmupCosineLR
  // WarmupCosineLR
  double warmup_min_ratio = 0.0;
  double cos_min_ratio = 1e-4;
  // OneCycle
  double cycle_min_lr = 0.0, cycle_max_lr = 0.0, decay_lr_rate = 0.0;
  int64_t cycle_first_step_size = 2000, cycle_second_step_size = -1;  // -1: same as first
  int64_t cycle_first_stair_count = 0, cycle_second_stair_count = -1, decay_step_size = 0;
  bool cycle_momentum = true;
  double cycle_min_mom = 0.8, cycle_max_mom = 0.9, decay_mom_rate = 0.0;
  // LRRangeTest
  double lr_range_test_min_lr = 1e-3;
  int64_t lr_range_test_step_size = 2000;
  double lr_range_test_step_rate = 1.0;
  bool lr_range_test_staircase = false;
};

// Learning rate for the optimizer step that follows `steps_taken` successful steps (0 for the first
// step), as DeepSpeed's scheduler reports it; `base_lr` is the optimizer's lr (used when type is "").
double lr_at(const LrScheduleConfig& config, double base_lr, int64_t steps_taken);
struct AdamBetas {
  double beta1, beta2;
};
// Adam's betas for that step. OneCycle with cycle_momentum cycles beta1 and, as DeepSpeed does,
// holds beta2 at 0.99; other schedules return the optimizer's betas.
AdamBetas betas_at(const LrScheduleConfig& config, AdamBetas base, int64_t steps_taken);

}  // namespace zt
