#pragma once
// The weight of a micro-batch's mean loss in its step's loss when some targets do not count (a
// loss mask). The step's loss is the sum of its token losses over the targets that count in all
// of its micro-batches on all ranks, not a mean of means: a micro-batch whose mean covers c of
// the step's C counted targets weighs c / C. The engine averages n micro-batches (ranks ×
// accumulation) with equal weights 1 / n, so relative to that the weight is c · n / C: exactly 1
// when every target counts, so a run without a mask computes what it always has, bit for bit.
#include <cstdint>

namespace zt {

class MicroBatchWeights {
public:
  // step_counted: the targets that count in the whole step; micro_batches: n.
  MicroBatchWeights(int64_t step_counted, int64_t micro_batches)
      : step_counted_(step_counted), micro_batches_(micro_batches) {}
  // The weight of a micro-batch with `counted` targets that count: what its mean loss and its
  // backward's dloss are multiplied by. 0 for one without any, and in a step without any.
  double of(int64_t counted) const {
    return step_counted_ > 0 ? double(counted) * double(micro_batches_) / double(step_counted_) : 0.0;
  }
  // Whether the step has a target that counts (else it has no loss: NaN).
  bool any() const { return step_counted_ > 0; }

private:
  int64_t step_counted_, micro_batches_;
};

}  // namespace zt
