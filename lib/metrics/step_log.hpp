#pragma once
// Rank 0's log lines of the training steps: one per logged step (loss, learning rate, gradient
// norm, time, throughput, MFU), with wall_clock_breakdown where its time went, one per
// evaluation and one per sample of text. Where no progress line shows (a log redirected to a file
// or a pipe), a step that ends `quiet_seconds` or more after the last line is logged too, so that
// such a log says how the run goes at least that often whatever training.logging_steps is.
#include <chrono>
#include <cstdint>

#include "metrics/sink.hpp"

namespace zt {

class StepLog final : public MetricsSink {
public:
  // quiet_seconds 0: only the logged steps.
  explicit StepLog(int64_t total_steps, double quiet_seconds = 0);
  void step(const StepRecord& r) override;
  void eval(const EvalRecord& r) override;
  void sample(const SampleRecord& r) override;

private:
  using Clock = std::chrono::steady_clock;
  bool quiet_too_long() const;

  int64_t total_;
  double quiet_seconds_;
  Clock::time_point last_line_;
};

// How long a log without a progress line may go without a step line.
inline constexpr double kQuietLogSeconds = 30.0;

}  // namespace zt
