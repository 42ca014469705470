#include "train/stop_messages.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "metrics/output_failure.hpp"
#include "train/stop_signals.hpp"

namespace zt {

void log_interrupted(int64_t step, int stop_requests, int world_size) {
  const int W = world_size;
  const int sig = StopSignals::first_signal();  // 0 when only other ranks were asked
  std::string by = sig ? fmt::format(" by {}", StopSignals::name(sig)) : "";
  spdlog::warn("interrupted{}: stopping after step {} (stop requested on {} of {} rank{}; Ctrl-C again ends the job "
               "at once)",
               by, step, stop_requests, W, W == 1 ? "" : "s");
}

void log_output_failure(int64_t step) {
  spdlog::error("stopped after step {}: {}", step, OutputFailure::message());
}

void log_resume_hint(int64_t step, bool checkpointed) {
  if (checkpointed)
    spdlog::warn("interrupted at step {}: the checkpoint of step {} is complete; run the same command with "
                 "training.resume auto to continue (exit status {})",
                 step, step, kExitInterrupted);
  else
    spdlog::warn("interrupted at step {}: nothing was saved (no training.checkpoint_dir); exit status {}", step,
                 kExitInterrupted);
}

}  // namespace zt
