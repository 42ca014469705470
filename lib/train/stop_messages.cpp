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

}  // namespace zt
