#pragma once
// DeepSpeed's comms_logger: per-collective calls, bytes and time, as Communicator::stats()
// measured them on rank 0. The totals cover the training steps (what the metrics file counts per
// step), not set-up, evaluation or the final save. Printed as a table at the end of the run; with
// `verbose`, also one line per printed step.
#include <cstdint>
#include <string>

#include "comm/communicator.hpp"
#include "config/config.hpp"

namespace zt {

// Bytes in decimal units, to read beside GB/s: "512 B", "3.7 MB", "1.25 GB".
std::string show_bytes(double bytes);

class CommsSummary {
public:
  CommsSummary() = default;  // logs nothing (disabled, or ranks other than 0)
  explicit CommsSummary(const config::CommsLoggerConfig& config);

  void add(const CommStats& step);                          // one training step's counts
  void log_step(int64_t step, const CommStats& s) const;   // verbose only
  void log_total(int64_t steps) const;

private:
  bool shown(CommOp op, const CommStats& s) const;  // called in this period, and profiled

  bool enabled_ = false;
  config::CommsLoggerConfig config_;
  CommStats total_;
};

}  // namespace zt
