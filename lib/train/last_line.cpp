#include "train/last_line.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "ckpt/checkpoint_dir.hpp"
#include "core/printable.hpp"
#include "metrics/output_failure.hpp"
#include "train/stop_signals.hpp"

namespace zt {

std::string last_line(const RunEnding& e) {
  std::string what;
  if (!e.output_failure.empty())
    what = fmt::format("stopped at step {} of {}: {}", e.step, e.steps, e.output_failure);
  else if (e.interrupted)
    what = fmt::format("stopped at step {} of {}: interrupted by {}", e.step, e.steps,
                       e.stop_signal.empty() ? "a stop signal to another rank" : e.stop_signal);
  else if (!e.early_stop.empty())
    what = fmt::format("stopped early at step {} of {}: {}", e.step, e.steps, e.early_stop);
  else
    what = fmt::format("finished at step {} of {}", e.step, e.steps);
  if (!e.best.empty()) what += "; best " + e.best;
  const bool cut_short = e.step < e.steps && e.early_stop.empty();
  std::string saved;
  if (!e.checkpoint.empty())
    saved = "; checkpoint at " + e.checkpoint;
  else if (e.checkpoints)
    saved = "; no checkpoint saved";
  else if (cut_short)
    saved = "; no checkpoint (training.checkpoint_dir is not set)";
  std::string next;
  if (cut_short) {
    if (e.checkpoint.empty())
      next = "; a rerun starts again from step 1";
    else if (e.resume.latest())
      next = fmt::format("; resume with the same command (training.resume {})", e.resume.name());
    else
      next = "; resume with the same command and --set training.resume=auto";
  }
  return fmt::format("{}{}{} (exit status {})", what, saved, next, e.exit_code);
}

void log_last_line(const config::Config& config, int64_t step, bool interrupted, int exit_code,
                   const std::string& early_stop, const std::string& best) {
  RunEnding e;
  e.step = step;
  e.steps = config.training.steps;
  e.interrupted = interrupted;
  if (const int sig = StopSignals::first_signal()) e.stop_signal = StopSignals::name(sig);
  e.output_failure = OutputFailure::message();
  e.checkpoints = !config.training.checkpoint_dir.empty();
  if (e.checkpoints) {
    try {
      e.checkpoint = printable(latest_checkpoint(config.training.checkpoint_dir).value_or(""));
    } catch (const std::exception&) {
      // An unreadable `latest`: the line says no checkpoint was saved.
    }
  }
  e.resume = config.training.resume;
  e.early_stop = early_stop;
  e.best = best;
  e.exit_code = exit_code;
  const std::string line = last_line(e);
  if (exit_code == 0)
    spdlog::info("{}", line);
  else
    spdlog::warn("{}", line);
}

}  // namespace zt
