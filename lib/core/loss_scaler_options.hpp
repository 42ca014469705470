#pragma once
// DeepSpeed's dynamic loss scaler (the fp16 block's settings): what the config reads and the ZeRO
// engine's LossScaler runs by.
#include <cstdint>

namespace zt {

struct LossScalerOptions {
  double loss_scale = 0.0;  // 0: dynamic
  int initial_scale_power = 16;
  int64_t loss_scale_window = 1000;
  int hysteresis = 2;
  bool consecutive_hysteresis = false;
  double min_loss_scale = 1.0;
};

}  // namespace zt
