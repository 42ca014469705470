#pragma once
// Rank 0's log lines of the training steps: one per logged step (loss, learning rate, gradient
// norm, time, throughput, MFU), with wall_clock_breakdown where its time went, one per
// evaluation and one per sample of text.
#include <cstdint>

#include "metrics/sink.hpp"

namespace zt {

class StepLog final : public MetricsSink {
public:
  explicit StepLog(int64_t total_steps) : total_(total_steps) {}
  void step(const StepRecord& r) override;
  void eval(int64_t step, double val_loss) override;
  void sample(const SampleRecord& r) override;

private:
  int64_t total_;
};

}  // namespace zt
