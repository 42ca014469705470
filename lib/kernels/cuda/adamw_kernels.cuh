#pragma once
// AdamW kernels (adamw.hpp); the arithmetic of one element is adamw_math.cuh's.
#include "kernels/cuda/adamw.hpp"
#include "kernels/cuda/adamw_math.cuh"
#include "kernels/cuda/common.cuh"

namespace zt::cuda::adamw_kernels {

constexpr int kBlock = 256;

template <typename G, typename P>
__device__ __forceinline__ void update_one(float* master, float* m, float* v, const G* grads, float grad_factor,
                                           P* params, size_t i, const AdamWScalars& s, bool decay) {
  const float g = __fmul_rn(to_float_exact(grads[i]), grad_factor);
  float p = master[i], mi = m[i], vi = v[i];
  adamw_element(p, mi, vi, g, s, decay);
  master[i] = p;
  m[i] = mi;
  v[i] = vi;
  if (params) params[i] = from_float_exact<P>(p);
}

template <typename G, typename P>
__global__ void adamw_range_kernel(float* master, float* m, float* v, const G* grads, float grad_factor, P* params,
                                   size_t n, AdamWScalars s, bool decay) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) update_one(master, m, v, grads, grad_factor, params, i, s, decay);
}

template <typename G, typename P>
__global__ void adamw_chunks_kernel(float* master, float* m, float* v, const G* grads, float grad_factor, P* params,
                                    const AdamWChunk* chunks, AdamWScalars s) {
  const AdamWChunk c = chunks[blockIdx.x];
  for (size_t k = threadIdx.x; k < c.size; k += blockDim.x)
    update_one(master, m, v, grads, grad_factor, params, size_t(c.offset) + k, s, c.decay != 0);
}

}  // namespace zt::cuda::adamw_kernels
