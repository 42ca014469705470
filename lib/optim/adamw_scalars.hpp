#pragma once
// The per-step constants of AdamW, shared by the CPU update (adamw.cpp) and the GPU's
// (kernels/cuda/adamw_math.cuh): formed in double and rounded to float the way PyTorch turns
// Python scalars into kernel arguments, so that both compute with the same floats.
#include <cmath>
#include <cstdint>

#include "optim/adamw.hpp"

namespace zt {

struct AdamWScalars {
  float param_scale;  // 1 - lr·wd (decoupled decay)
  float l2;           // wd (L2 decay)
  float beta1, one_minus_beta1, beta2, one_minus_beta2;
  float bias_correction2_sqrt;
  float neg_step_size;  // -lr / (1 - beta1^step)
  float eps;
  bool l2_mode;    // g += wd·p before the moments (Adam with L2)
  bool decoupled;  // p *= 1 - lr·wd before the update (AdamW)
};

// The constants for one step (counting from 1); decay false: no weight decay (param_scale 1, l2 0,
// neither mode).
inline AdamWScalars adamw_scalars(const AdamWHyper& h, int64_t step, bool decay = true) {
  const double lr = h.lr, wd = decay ? double(h.weight_decay) : 0.0;
  const double beta1 = h.beta1, beta2 = h.beta2;
  AdamWScalars s;
  s.param_scale = float(1.0 - lr * wd);
  s.l2 = float(wd);
  s.beta1 = h.beta1;
  s.one_minus_beta1 = float(1.0 - beta1);
  s.beta2 = h.beta2;
  s.one_minus_beta2 = float(1.0 - beta2);
  const double bc1 = h.bias_correction ? 1.0 - std::pow(beta1, double(step)) : 1.0;
  const double bc2 = h.bias_correction ? 1.0 - std::pow(beta2, double(step)) : 1.0;
  s.bias_correction2_sqrt = float(std::sqrt(bc2));
  s.neg_step_size = float(-(lr / bc1));
  s.eps = h.eps;
  s.l2_mode = !h.adam_w_mode && wd != 0.0;
  s.decoupled = h.adam_w_mode && wd != 0.0;
  return s;
}

}  // namespace zt
