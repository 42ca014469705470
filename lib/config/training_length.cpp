#include "config/training_length.hpp"

#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "core/error.hpp"
#include "data/data_files.hpp"
#include "hf/hf_dir.hpp"

namespace zt::config {

namespace {

constexpr const char* kTotalKey = "scheduler.params.total_num_steps";

// The scheduler's total_num_steps when it is given as a whole number of steps.
std::optional<int64_t> scheduler_total(const ValueSources& s) {
  const nlohmann::json* v = s.find(kTotalKey);
  if (!v || !v->is_number()) return std::nullopt;
  const double d = v->get<double>();
  if (!(d >= 1) || std::floor(d) != d || d > 9e18) return std::nullopt;  // the scheduler's reader reports it
  return int64_t(d);
}

struct FromEpochs {
  int64_t steps, windows, windows_per_step;
};

FromEpochs steps_from_epochs(const Config& c, const Diagnostics& diag) {
  const int64_t window_tokens = c.train_micro_batch_size_per_gpu * c.data.seq_len;
  int64_t tokens = 0;
  try {
    tokens = count_tokens(c.data.train, token_format_from_name(c.data.format),
                          model_tokenizer_directory(c.model.path, c.training.init_from));
  } catch (const Error& e) {
    diag.fail("training.epochs", fmt::format("the windows of data.train cannot be counted: {}", e.what()));
  }
  const int64_t windows = (tokens - 1) / window_tokens;
  if (windows < 1)
    diag.fail("training.epochs", fmt::format("data.train holds {} tokens, too few for one window of {} x {} + 1",
                                             tokens, c.train_micro_batch_size_per_gpu, c.data.seq_len));
  const int64_t per_step = c.gradient_accumulation_steps * c.world_size;
  const double steps = std::ceil(c.training.epochs * double(windows) / double(per_step));
  if (steps > 9e18) diag.fail("training.epochs", fmt::format("{:g} epochs is beyond any run", c.training.epochs));
  return {std::max<int64_t>(1, int64_t(steps)), windows, per_step};
}

}  // namespace

std::string resolve_training_length(Config& c, const ValueSources& s, const Diagnostics& diag) {
  TrainingConfig& t = c.training;
  const bool steps_given = s.given("training.steps");
  const bool epochs_given = t.epochs > 0;
  const std::optional<int64_t> total = scheduler_total(s);
  std::optional<FromEpochs> from_epochs;
  if (epochs_given) from_epochs = steps_from_epochs(c, diag);

  std::string winner, how;
  if (steps_given) {
    winner = "training.steps";
    how = fmt::format("from {}", s.described("training.steps"));
  } else if (from_epochs) {
    t.steps = from_epochs->steps;
    winner = "training.epochs";
    how = fmt::format("from {} {:g}: {:g} x {} windows of {} x {} tokens / {} windows per step ({} x {} rank{}), "
                      "rounded up",
                      s.described("training.epochs"), t.epochs, t.epochs, from_epochs->windows,
                      c.train_micro_batch_size_per_gpu, c.data.seq_len, from_epochs->windows_per_step,
                      c.gradient_accumulation_steps, c.world_size, c.world_size == 1 ? "" : "s");
  } else if (total) {
    t.steps = *total;
    winner = kTotalKey;
    how = fmt::format("from {} (no training.steps)", s.described(kTotalKey));
  } else {
    how = "by default (no training.steps, training.epochs or scheduler.params.total_num_steps)";
  }

  if (from_epochs && winner != "training.epochs" && from_epochs->steps != t.steps)
    diag.warn("training.epochs", fmt::format("{:g} epochs make {} steps, but {} says {}: the run trains {} steps ({} "
                                             "wins)",
                                             t.epochs, from_epochs->steps, winner, t.steps, t.steps, winner));
  if (total && winner != kTotalKey && *total != t.steps)
    diag.warn(kTotalKey, fmt::format("{} disagrees with {} {}: the run trains {} steps ({} wins) while the schedule "
                                     "decays to step {}",
                                     *total, winner, t.steps, t.steps, winner, *total));
  return fmt::format("length {} steps {}", t.steps, how);
}

}  // namespace zt::config
