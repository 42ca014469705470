#pragma once
// The Hugging Face Trainer's learning-rate schedules (its lr_scheduler_type, transformers'
// get_scheduler), which zerotrain runs when a config has no scheduler block: each a factor of the
// peak learning rate at the step that follows `steps_taken` steps, computed as transformers' lr
// lambdas compute it, and multiplied by the peak as torch's LambdaLR multiplies.
#include <cstdint>
#include <string>
#include <vector>

#include "optim/lr_schedule.hpp"

namespace zt {

// The Trainer's names zerotrain implements: linear, cosine, cosine_with_restarts, polynomial,
// constant, constant_with_warmup, inverse_sqrt, cosine_with_min_lr.
const std::vector<std::string>& trainer_schedule_names();
// `type` is one of them apart from constant (which runs as LrScheduleConfig's type "").
bool is_trainer_schedule(const std::string& type);
// What the schedule does after its warmup, in words: "down to 0 at step 100", "a cosine (0.5
// cycles) down to 0.1 x the peak at step 100", ...
std::string describe_trainer_decay(const LrScheduleConfig& config);
// The learning rate of that step: warmup_max_lr (the optimizer's lr) times the schedule's factor.
double trainer_schedule_lr(const LrScheduleConfig& config, int64_t steps_taken);

}  // namespace zt
