#include "train/resume_schedule.hpp"

#include <fmt/format.h>

#include <cmath>

#include "ckpt/checkpoint_dir.hpp"
#include "ckpt/checkpoint_format.hpp"
#include "data/data_sampler.hpp"

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
  return {
      ScheduleChange::Kind::Schedule,
      fmt::format("resuming with another schedule than the checkpoint's run{}: step {} runs at lr {:.3e} where the "
                  "saved schedule gives {:.3e}. The run follows its own settings from the saved step on, as the "
                  "Hugging Face Trainer and DeepSpeed do; resume with the saved run's settings to keep its schedule",
                  changed.empty() ? "" : " (" + changed + ")", step + 1, next_lr, saved_next_lr)};
}

std::string resume_batch_change(const nlohmann::json& saved_config, int saved_world_size,
                                const nlohmann::json& saved_data, int64_t step, const config::Config& c) {
  const SamplerState saved = sampler_state_from_json(saved_data);
  const bool rows = saved.unit == "rows";
  const int64_t per_epoch = rows ? saved.num_rows : saved.num_windows;
  const int64_t before = rows ? saved.rows_per_step : saved.windows_per_step;
  const int64_t now = (rows ? c.train_micro_batch_size_per_gpu : 1) * c.gradient_accumulation_steps * c.world_size;
  if (before <= 0 || per_epoch <= 0 || before == now) return "";
  const auto number = [&](const char* key) {
    const nlohmann::json* v = at(saved_config, key);
    return v && v->is_number() ? v->get<int64_t>() : int64_t(0);
  };
  const int64_t micro = number("train_micro_batch_size_per_gpu"), accumulation = number("gradient_accumulation_steps");
  const int64_t saved_steps = number("training.steps");
  // Rows a step: the sequences of every rank's micro-batches (the sampler counts windows of B rows).
  const int64_t rows_before = rows ? before : before * micro, rows_now = c.train_batch_size;
  const double covered_now =
      saved.epochs() + double(std::max<int64_t>(0, c.training.steps - step) * now) / double(per_epoch);
  const double covered_before = double(saved_steps * before) / double(per_epoch);
  std::string text = fmt::format(
      "resuming with another batch than the checkpoint's run: {} -> {} rows a step (per_device_train_batch_size x "
      "gradient_accumulation_steps x ranks: {} x {} x {} -> {} x {} x {}); after {:.2f} epochs at step {}, the run "
      "ends "
      "at step {} and covers {:.2f} epochs (the saved run's plan: {} steps, {:.2f} epochs)",
      rows_before, rows_now, micro, accumulation, saved_world_size, c.train_micro_batch_size_per_gpu,
      c.gradient_accumulation_steps, c.world_size, saved.epochs(), step, c.training.steps, covered_now, saved_steps,
      covered_before);
  const bool covers_epochs_asked = c.training.epochs > 0 && std::fabs(covered_now - c.training.epochs) < 0.005;
  if (!covers_epochs_asked && std::fabs(covered_now - covered_before) >= 0.005)
    text += "; give the length in epochs (--num_train_epochs) for the steps to follow the batch, or keep the batch "
            "(per_device_train_batch_size x gradient_accumulation_steps x ranks)";
  return text;
}

std::optional<config::ResumedPosition> resumed_position(const config::TrainingConfig& t) {
  if (!t.resume.asked()) return std::nullopt;
  try {
    std::optional<std::string> step_dir;
    if (t.resume.latest())
      step_dir = latest_checkpoint(t.checkpoint_dir);
    else
      step_dir = resolve_checkpoint(t.resume.path);
    if (!step_dir) return std::nullopt;
    const CheckpointMeta meta = read_meta(*step_dir);
    return config::ResumedPosition{meta.step, sampler_state_from_json(meta.data).epochs()};
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace zt
