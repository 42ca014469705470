#include "zero/loss_scaler.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace zt {

LossScaler::LossScaler(const LossScalerOptions& c) {
  dynamic_ = c.loss_scale == 0.0;
  scale_ = dynamic_ ? std::ldexp(1.0f, c.initial_scale_power) : float(c.loss_scale);
  min_scale_ = float(c.min_loss_scale);
  window_ = std::max<int64_t>(1, c.loss_scale_window);
  hysteresis_ = hysteresis_left_ = std::max(1, c.hysteresis);
  consecutive_hysteresis_ = c.consecutive_hysteresis;
}

void LossScaler::update(bool overflow) {
  if (!dynamic_) return;
  if (overflow) {
    if (hysteresis_left_ <= 1) {
      if (scale_ <= min_scale_)
        fail("fp16: gradient overflow with the loss scale already at minimum ({}); "
             "lower the learning rate or raise fp16.min_loss_scale", min_scale_);
      scale_ = std::max(scale_ / 2.0f, min_scale_);
    } else {
      --hysteresis_left_;
    }
    last_overflow_ = iteration_;
  } else {
    if (consecutive_hysteresis_) hysteresis_left_ = hysteresis_;
    if ((iteration_ - last_overflow_) % window_ == 0) {
      if (!consecutive_hysteresis_) hysteresis_left_ = hysteresis_;
      scale_ *= 2.0f;
    }
  }
  ++iteration_;
}

void LossScaler::set_state(const State& s) {
  scale_ = s.scale;
  hysteresis_left_ = s.hysteresis_left;
  iteration_ = s.iteration;
  last_overflow_ = s.last_overflow_iteration;
}

}  // namespace zt
