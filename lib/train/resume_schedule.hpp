#pragma once
// A resume whose settings give another length or learning-rate schedule than the checkpoint's run
// (another --steps or --num_train_epochs, another lr, warmup or scheduler). zerotrain goes on with
// this run's schedule at the saved step, as the Hugging Face Trainer and DeepSpeed do (both
// rebuild the schedule from the new settings and restore only its position), and says so: which
// keys changed, and the learning rate of the next step under both schedules.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "config/config.hpp"

namespace zt {

struct ScheduleChange {
  enum class Kind { None, Length, Schedule } kind = Kind::None;  // Schedule: the next lr differs
  std::string message;
};

// `saved_config` is the resolved config meta.json records, `saved_next_lr` its schedule's lr of
// the step after `optimizer_steps` updates; `step` the last step saved.
ScheduleChange resume_schedule_change(const nlohmann::json& saved_config, double saved_next_lr, int64_t optimizer_steps,
                                      int64_t step, const config::Config& config);

}  // namespace zt
