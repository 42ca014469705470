#pragma once
// What the optimizer step derives from the gradients' global norm (VectorOps::grad_norm), kept in
// the memory the device computes in, so that clipping and the skip of a non-finite step happen on
// the device without the host waiting; the host reads it once the step's work is queued.
#include <cstdint>

namespace zt {

struct GradNorm {
  double sum_of_squares;  // of the scaled gradients, over every shard and rank
  double norm;            // its square root
  float grad_factor;      // what AdamW multiplies the gradients by: the scale times the clip coefficient
  int32_t skip;           // nonzero: the sum is not finite and the update does nothing
};

}  // namespace zt
