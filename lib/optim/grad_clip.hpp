#pragma once
// Gradient clipping by global L2 norm (PyTorch clip_grad_norm_, DeepSpeed gradient_clipping).
// The engine sums squares over its shards and ranks (VectorOps::sum_of_squares), takes the root,
// and scales every gradient by clip_coefficient inside the optimizer step.
#include <cstddef>

namespace zt {

// max_norm / (total_norm + 1e-6) when that is below 1, else 1 (PyTorch's clamped clip_coef; the
// same test as DeepSpeed's (norm + 1e-6) / clip > 1). max_norm <= 0 disables clipping: 1.
double clip_coefficient(double total_norm, double max_norm);

}  // namespace zt
