#pragma once
// The fp16 loss scaler: DeepSpeed's DynamicLossScaler rules (docs/config.md, "fp16 and bf16"), checked once per
// optimizer step after all ranks agree whether any gradient overflowed.
#include <cstdint>

#include "zero/engine_options.hpp"

namespace zt {

class LossScaler {
public:
  LossScaler() = default;  // scale 1, never changes (bf16 and fp32 training)
  explicit LossScaler(const LossScalerOptions& options);

  float scale() const { return scale_; }
  bool dynamic() const { return dynamic_; }
  // Records the outcome of a step (overflow: it was skipped) and adjusts the scale for the next.
  // Throws zt::Error when an overflow happens with the scale already at its minimum.
  void update(bool overflow);

  struct State {
    float scale;
    int hysteresis_left;
    int64_t iteration, last_overflow_iteration;
  };
  State state() const { return {scale_, hysteresis_left_, iteration_, last_overflow_}; }
  void set_state(const State& s);

private:
  bool dynamic_ = false;
  float scale_ = 1.0f;
  float min_scale_ = 1.0f;
  int64_t window_ = 1000;
  int hysteresis_ = 2, hysteresis_left_ = 2;
  bool consecutive_hysteresis_ = false;
  int64_t iteration_ = 0, last_overflow_ = -1;
};

}  // namespace zt
