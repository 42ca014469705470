#pragma once
// Rank 0's log lines of the training steps: one per logged step (loss, learning rate, gradient
// norm, time, throughput, MFU), with wall_clock_breakdown where its time went, and one per
// evaluation.
#include <cstdint>

#include "metrics/sink.hpp"

namespace zt {

class StepLog final : public MetricsSink {
public:
  explicit StepLog(int64_t total_steps) : total_(total_steps) {}
  void step(const StepRecord& r) override;
  void eval(int64_t step, double val_loss) override;

private:
  int64_t total_;
};

}  // namespace zt
