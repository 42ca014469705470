#pragma once
// DeepSpeed's learning-rate schedules (deepspeed/runtime/lr_schedules.py) and the Hugging Face
// Trainer's (optim/trainer_schedules.hpp), as pure functions of the number of optimizer steps
// already taken.
#include <cstdint>
#include <string>

namespace zt {

struct LrScheduleConfig {
  // "" (constant lr), WarmupLR, WarmupDecayLR, WarmupCosineLR, OneCycle, LRRangeTest, or one of the
  // Hugging Face Trainer's lr_scheduler_type (linear, cosine, ...: trainer_schedules.hpp), which
  // zerotrain runs when a config has no scheduler block.
  std::string type;
  // WarmupLR / WarmupDecayLR; the Trainer's use warmup_max_lr (the peak), warmup_num_steps (no
  // minimum of 2 there) and total_num_steps
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
  // The Trainer's lr_scheduler_kwargs: cosine (0.5), cosine_with_restarts (1), cosine_with_min_lr
  double num_cycles = 0.5;
  double min_lr_rate = 0.0;  // cosine_with_min_lr: the floor as a fraction of the peak
  double lr_end = 1e-7, power = 1.0;  // polynomial
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
