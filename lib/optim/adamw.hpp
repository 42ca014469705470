#pragma once
// AdamW on a contiguous range of fp32 parameters, rounding exactly like PyTorch's
// torch.optim.AdamW (single-tensor path, fp32) on CPUs with fused multiply-add.
#include <cstddef>
#include <cstdint>

namespace zt {

struct AdamWHyper {
  float lr, beta1, beta2, eps, weight_decay;
  bool bias_correction = true;
  // true: decoupled decay p -= lr*wd*p before the Adam update (torch.optim.AdamW);
  // false: L2 decay g += wd*p before the moments (torch.optim.Adam, DeepSpeed's adam_w_mode false).
  bool adam_w_mode = true;
};

// One step on n elements: param, m and v are updated in place. step counts from 1 (the bias
// correction uses it). decay false: no weight decay for this range (biases, norm weights).
// Elementwise, so the result does not depend on the thread count or on how callers split ranges.
void adamw_update(float* param, const float* grad, float* m, float* v, size_t n, const AdamWHyper& h,
                  int64_t step, bool decay);

}  // namespace zt
