#include "config/training_length.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "config/row_options.hpp"
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
  int64_t steps, units, units_per_step;
  std::string unit, per_step;  // "windows of B x T tokens" and "windows", or rows of samples
  int64_t tokens = 0;          // of data.train, for windows
};

// An epoch in the units the run reads: the windows of the token stream, or the rows of its samples
// (data/sample_rows.hpp) when the files are record data. Throws zt::Error when the files cannot be
// read.
FromEpochs epoch_of(const Config& c) {
  const TokenFormat format = kTokenFormatNames.parse(c.data.format, "data.format");
  const std::string tokenizer = model_tokenizer_directory(c.model.path, c.training.init_from);
  const int64_t B = c.train_micro_batch_size_per_gpu, per_step = c.gradient_accumulation_steps * c.world_size;
  const RowOptions options = row_options(c.data);
  if (options.packing != Packing::Windows) {
    const std::vector<int64_t> offsets = read_sample_offsets(c.data.train, format, tokenizer);
    if (!offsets.empty())
      return {0, plan_rows(offsets, options, "data.train").rows(), B * per_step,
              fmt::format("rows of samples ({} a micro-batch)", B), "rows"};
  }
  const int64_t tokens = count_tokens(c.data.train, format, tokenizer);
  return {0, (tokens - 1) / (B * c.data.seq_len), per_step, fmt::format("windows of {} x {} tokens", B, c.data.seq_len),
          "windows", tokens};
}

FromEpochs steps_from_epochs(const Config& c, const Diagnostics& diag) {
  FromEpochs e;
  try {
    e = epoch_of(c);
  } catch (const Error& error) {
    diag.fail("training.epochs", fmt::format("the epochs of data.train cannot be counted: {}", error.what()));
  }
  if (e.units < 1)
    diag.fail("training.epochs", fmt::format("data.train holds {} tokens, too few for one window of {} x {} + 1",
                                             e.tokens, c.train_micro_batch_size_per_gpu, c.data.seq_len));
  const double steps = std::ceil(c.training.epochs * double(e.units) / double(e.units_per_step));
  if (steps > 9e18) diag.fail("training.epochs", fmt::format("{:g} epochs is beyond any run", c.training.epochs));
  e.steps = std::max<int64_t>(1, int64_t(steps));
  return e;
}

}  // namespace

std::string resolve_training_length(Config& c, const ValueSources& s, const Diagnostics& diag,
                                    const std::optional<ResumedPosition>& resumed) {
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
    const std::string per_step =
        fmt::format("{} {} per step ({}{} x {} rank{}), rounded up", from_epochs->units_per_step, from_epochs->per_step,
                    from_epochs->per_step == "rows" ? fmt::format("{} x ", c.train_micro_batch_size_per_gpu) : "",
                    c.gradient_accumulation_steps, c.world_size, c.world_size == 1 ? "" : "s");
    how = fmt::format("from {} {:g}: {:g} x {} {} / {}", s.described("training.epochs"), t.epochs, t.epochs,
                      from_epochs->units, from_epochs->unit, per_step);
    if (resumed && resumed->step > 0) {
      // The steps already taken read what they read, at whatever batch; the rest follows this one.
      const double left = std::max(0.0, t.epochs - resumed->epochs);
      t.steps = std::max<int64_t>(
          1, resumed->step + int64_t(std::ceil(left * double(from_epochs->units) / double(from_epochs->units_per_step) -
                                               1e-9)));
      how = fmt::format("from {} {:g}, resumed at step {} after {:.2f} epochs: {} + {:.2f} x {} {} / {}",
                        s.described("training.epochs"), t.epochs, resumed->step, resumed->epochs, resumed->step, left,
                        from_epochs->units, from_epochs->unit, per_step);
    }
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
