#pragma once
// DeepSpeed's comms_logger: per-collective calls, bytes and time, as Communicator::stats()
// measured them on rank 0. The totals cover the training steps (what the metrics file counts per
// step), not set-up, evaluation or the final save. Printed as a table at the end of the run; with
// `verbose`, also one line per printed step.
#include <cstdint>
#include <string>

#include "comm/communicator.hpp"
#include "config/config.hpp"
#include "metrics/sink.hpp"

namespace zt {

// Bytes in decimal units, to read beside GB/s: "512 B", "3.7 MB", "1.25 GB".
std::string show_bytes(double bytes);

class CommsSummary final : public MetricsSink {
public:
  explicit CommsSummary(const config::CommsLoggerConfig& config);

  void step(const StepRecord& r) override;        // adds its counts; verbose: a line when the step is logged
  void summary(const SummaryRecord& r) override;  // the table

private:
  void log_step(int64_t step, const CommStats& s) const;
  bool shown(CommOp op, const CommStats& s) const;  // called in this period, and profiled

  config::CommsLoggerConfig config_;
  CommStats total_;
};

}  // namespace zt
