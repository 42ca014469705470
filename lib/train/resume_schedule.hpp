#pragma once
// A resume whose settings give another length or learning-rate schedule than the checkpoint's run
// (another --steps or --num_train_epochs, another lr, warmup or scheduler). zerotrain goes on with
// this run's schedule at the saved step, as the Hugging Face Trainer and DeepSpeed do (both
// rebuild the schedule from the new settings and restore only its position), and says so: which
// keys changed, and the learning rate of the next step under both schedules.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
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

// A resume with another global batch than the saved run's (another world size with the same
// per-device flags, another accumulation): the rows a step before and now, and what that makes of
// the epochs the run covers ("8 -> 4 rows a step ...: the run ends at step 72 and covers 3.00
// epochs (the saved run's plan: 39 steps, 3.00 epochs)"). "" when the batch is the same.
// `saved_world_size` and `saved_config` are meta.json's, `saved_data` its data sampler state.
std::string resume_batch_change(const nlohmann::json& saved_config, int saved_world_size,
                                const nlohmann::json& saved_data, int64_t step, const config::Config& config);

// Where the checkpoint that training.resume names stands (config::ResolveOptions::resumed_position),
// or nothing when there is none or it cannot be read (the run then says why as it opens it).
std::optional<config::ResumedPosition> resumed_position(const config::TrainingConfig& training);

}  // namespace zt
