#include "metrics/comms_summary.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>

namespace zt {

std::string show_bytes(double b) {
  if (b < 1e3) return fmt::format("{:.0f} B", b);
  if (b < 1e6) return fmt::format("{:.1f} KB", b / 1e3);
  if (b < 1e9) return fmt::format("{:.1f} MB", b / 1e6);
  return fmt::format("{:.2f} GB", b / 1e9);
}

CommsSummary::CommsSummary(const config::CommsLoggerConfig& config) : config_(config) {}

bool CommsSummary::shown(CommOp op, const CommStats& s) const {
  if (s.calls[size_t(op)] == 0) return false;
  if (config_.prof_all) return true;
  const auto& ops = config_.prof_ops;  // already zerotrain's kind names (config/monitor_blocks.cpp)
  return std::find(ops.begin(), ops.end(), comm_op_name(op)) != ops.end();
}

void CommsSummary::step(const StepRecord& r) {
  total_ += r.comm;
  if (r.logged) log_step(r.step, r.comm);
}

void CommsSummary::log_step(int64_t step, const CommStats& s) const {
  if (!config_.verbose) return;
  std::string line;
  for (CommOp op : kCommOps) {
    if (!shown(op, s)) continue;
    const size_t i = size_t(op);
    line += fmt::format("{}{} {} call{}, {} bytes, {:.3f} ms", line.empty() ? "" : " | ", comm_op_name(op), s.calls[i],
                        s.calls[i] == 1 ? "" : "s", s.bytes_sent[i], 1e3 * s.seconds[i]);
  }
  spdlog::info("      comms step {}: {}", step, line.empty() ? "no profiled collectives" : line);
}

void CommsSummary::summary(const SummaryRecord& r) {
  const int64_t steps = r.steps;  // the steps this run trained (a resumed run starts after the checkpoint's)
  spdlog::info("comms_logger: collectives of rank 0 over {} training step{} (set-up and evaluation not counted)",
               steps, steps == 1 ? "" : "s");
  spdlog::info("  {:<16} {:>8} {:>16} {:>14} {:>12} {:>10}", "collective", "calls", "bytes sent", "mean message",
               "time (ms)", "GB/s");
  bool any = false;
  for (CommOp op : kCommOps) {
    if (!shown(op, total_)) continue;
    any = true;
    const size_t i = size_t(op);
    const uint64_t bytes = total_.bytes_sent[i], calls = total_.calls[i];
    const double seconds = total_.seconds[i];
    // Bandwidth only where it means something: a barrier sends nothing, and a timer can read 0.
    std::string bandwidth = bytes > 0 && seconds > 0 ? fmt::format("{:.4g}", double(bytes) / seconds / 1e9) : "-";
    spdlog::info("  {:<16} {:>8} {:>16} {:>14} {:>12.3f} {:>10}", comm_op_name(op), calls, bytes,
                 show_bytes(double(bytes) / double(calls)), 1e3 * seconds, bandwidth);
  }
  if (!any) spdlog::info("  (no profiled collective was called)");
}

}  // namespace zt
