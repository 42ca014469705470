#pragma once
// training.lr_scheduler_kwargs: the parameters of the Trainer's schedule, as its
// --lr_scheduler_kwargs gives them to transformers' get_scheduler (num_cycles of the cosines,
// min_lr or min_lr_rate of cosine_with_min_lr, lr_end and power of polynomial; the Trainer passes
// none to the others). Each schedule takes only its own; the others are errors naming the schedule.
#include <nlohmann/json.hpp>
#include <string>

#include "config/block.hpp"
#include "optim/lr_schedule.hpp"

namespace zt::config {

// Reads and judges training.lr_scheduler_kwargs for schedule `type`; returns the keys given.
nlohmann::json read_schedule_kwargs(Block& training, const std::string& type);
// Puts the kwargs of `schedule.type` into `schedule`, with transformers' defaults for those not
// given; min_lr becomes min_lr_rate = min_lr / peak_lr, as transformers computes it. polynomial's
// lr_end must be below the peak (transformers' rule): else an error through `diag`.
void apply_schedule_kwargs(const nlohmann::json& kwargs, double peak_lr, LrScheduleConfig& schedule,
                           const Diagnostics& diag);

}  // namespace zt::config
