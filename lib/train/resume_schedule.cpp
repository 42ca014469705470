#include "train/resume_schedule.hpp"

#include <fmt/format.h>

#include <cmath>

namespace zt {

namespace {

// What sets the length and the schedule, as the resolved config prints them.
const char* const kScheduleKeys[] = {"training.steps",       "training.lr",
                                     "training.warmup_steps", "training.lr_scheduler_type",
                                     "training.lr_scheduler_kwargs", "optimizer.params.lr",
                                     "scheduler"};

// The value at a dotted path, or nullptr.
const nlohmann::json* at(const nlohmann::json& j, std::string path) {
  for (char& c : path)
    if (c == '.') c = '/';
  const nlohmann::json::json_pointer pointer("/" + path);
  return j.contains(pointer) ? &j.at(pointer) : nullptr;
}

bool same(const nlohmann::json& a, const nlohmann::json& b) {
  if (a.is_number() && b.is_number()) return a.get<double>() == b.get<double>();
  return a == b;
}

// "training.steps 100 -> 400, ..." over the keys both configs record.
std::string changed_keys(const nlohmann::json& saved, const nlohmann::json& now) {
  std::string text;
  for (const char* key : kScheduleKeys) {
    const nlohmann::json* before = at(saved, key);
    const nlohmann::json* after = at(now, key);
    if (!before || !after || same(*before, *after)) continue;
    text += fmt::format("{}{} {} -> {}", text.empty() ? "" : ", ", key, before->dump(), after->dump());
  }
  return text;
}

}  // namespace

ScheduleChange resume_schedule_change(const nlohmann::json& saved_config, double saved_next_lr, int64_t optimizer_steps,
                                      int64_t step, const config::Config& config) {
  const std::string changed = changed_keys(saved_config, config::to_json(config));
  const double next_lr = lr_at(config.scheduler, config.optimizer.lr, optimizer_steps);
  const bool lr_differs = std::fabs(next_lr - saved_next_lr) > 1e-12 * std::fabs(saved_next_lr);
  if (changed.empty() && !lr_differs) return {};
  if (!lr_differs)
    return {ScheduleChange::Kind::Length,
            fmt::format("resuming with other settings than the checkpoint's run: {}; the learning rate of step {} is "
                        "{:.3e} under both",
                        changed, step + 1, next_lr)};
  return {ScheduleChange::Kind::Schedule,
          fmt::format("resuming with another schedule than the checkpoint's run{}: step {} runs at lr {:.3e} where the "
                      "saved schedule gives {:.3e}. The run follows its own settings from the saved step on, as the "
                      "Hugging Face Trainer and DeepSpeed do; resume with the saved run's settings to keep its schedule",
                      changed.empty() ? "" : " (" + changed + ")", step + 1, next_lr, saved_next_lr)};
}

}  // namespace zt
