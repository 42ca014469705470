#pragma once
// Gradient clipping by global L2 norm (PyTorch clip_grad_norm_, DeepSpeed gradient_clipping).
// The engine sums squares over its shards and ranks, takes the root, and scales every gradient
// by clip_coefficient.
#include <cstddef>

namespace zt {

// Sum of x[i]^2 over [0, n) in double. Deterministic: fixed-size chunks, each summed with a fixed
// interleaving, chunk sums added in order. The result depends only on the values and on n, never
// on the thread count.
double sum_of_squares(const float* x, size_t n);

// x[i] *= factor over [0, n).
void scale_in_place(float* x, size_t n, float factor);

// max_norm / (total_norm + 1e-6) when that is below 1, else 1 (PyTorch's clamped clip_coef; the
// same test as DeepSpeed's (norm + 1e-6) / clip > 1). max_norm <= 0 disables clipping: 1.
double clip_coefficient(double total_norm, double max_norm);

}  // namespace zt
