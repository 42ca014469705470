#pragma once
// AdamW over a flat shard on the GPU, fused: per element, read the gradient (fp32, bf16 or fp16)
// and scale it by a factor (unscale and clip in one multiply), update the fp32 master weight and
// the fp32 moments m and v, and write the updated weight back as a 16-bit parameter when training
// in 16 bits. The arithmetic is lib/optim/adamw.cpp's, operation for operation (adamw_math.cuh),
// so the GPU's updates equal the CPU's (and PyTorch's AdamW) bit for bit.
// Trick: none beyond fusion; one kernel reads each state array once and writes it once.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "core/dtype.hpp"
#include "kernels/grad_norm.hpp"
#include "optim/adamw.hpp"

namespace zt::cuda {

// A piece of the shard with one weight-decay setting; offset indexes every array of the call.
struct AdamWChunk {
  uint64_t offset;
  uint32_t size;
  uint32_t decay;  // 0: no weight decay (biases, norm weights)
};

// One step (step counts from 1) over master[0, n), m, v and grads, with weight decay when decay:
//   g = float(grads[i]) · grad_factor (rounded to fp32), then AdamW on master[i], m[i], v[i];
//   params[i] = master[i] rounded to param_type, unless params is null (fp32 training, where
//   master is the parameter buffer itself).
void adamw_update(float* master, float* m, float* v, const void* grads, DType grad_type, float grad_factor,
                  void* params, DType param_type, size_t n, bool decay, const AdamWHyper& hyper, int64_t step,
                  cudaStream_t stream);

// The same over a table of chunks in device memory (planned once, like zero/shard_optimizer.cpp's
// chunks): one block per chunk, so chunks of up to some 16K elements keep every SM busy. With
// `norm` (device memory), the factor is norm->grad_factor, read by the kernels, and nothing is
// updated when norm->skip: the host need not know the gradient norm to queue the step.
void adamw_update_chunks(float* master, float* m, float* v, const void* grads, DType grad_type, float grad_factor,
                         void* params, DType param_type, const AdamWChunk* chunks, int num_chunks,
                         const AdamWHyper& hyper, int64_t step, cudaStream_t stream, const GradNorm* norm = nullptr);

}  // namespace zt::cuda
