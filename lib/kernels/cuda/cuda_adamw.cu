#include "kernels/cuda/cuda_adamw.hpp"

#include "kernels/cuda/adamw_math.cuh"
#include "kernels/cuda/common.cuh"

namespace zt::cuda {

// The arithmetic of one element is adamw_math.cuh's.
namespace {

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

// With `norm` (device memory, the gradient norm's outcome): its factor, and nothing done when it
// says skip.
template <typename G, typename P>
__global__ void adamw_chunks_kernel(float* master, float* m, float* v, const G* grads, float grad_factor, P* params,
                                    const AdamWChunk* chunks, AdamWScalars s, const GradNorm* norm) {
  if (norm) {
    if (norm->skip) return;
    grad_factor = norm->grad_factor;
  }
  const AdamWChunk c = chunks[blockIdx.x];
  for (size_t k = threadIdx.x; k < c.size; k += blockDim.x)
    update_one(master, m, v, grads, grad_factor, params, size_t(c.offset) + k, s, c.decay != 0);
}

AdamWScalars checked_scalars(const AdamWHyper& hyper, int64_t step, const char* op) {
  require(step >= 1, op, ": step must count from 1, got ", step);
  return adamw_scalars(hyper, step);
}

}  // namespace

void adamw_update(float* master, float* m, float* v, const void* grads, DType grad_type, float grad_factor,
                  void* params, DType param_type, size_t n, bool decay, const AdamWHyper& hyper, int64_t step,
                  cudaStream_t stream) {
  const AdamWScalars s = checked_scalars(hyper, step, "adamw_update");
  if (n == 0) return;
  const unsigned grid = grid_size(n, kBlock, "adamw_update");
  // P = float when params is null: the kernels then never write it.
  dispatch_any2(grad_type, params ? param_type : DType::F32, [&](auto tg, auto tp) {
    using G = decltype(tg);
    using P = decltype(tp);
    launch(adamw_range_kernel<G, P>, grid, kBlock, 0, stream, "adamw_range_kernel", master, m, v,
           static_cast<const G*>(grads), grad_factor, static_cast<P*>(params), n, s, decay);
  });
}

void adamw_update_chunks(float* master, float* m, float* v, const void* grads, DType grad_type, float grad_factor,
                         void* params, DType param_type, const AdamWChunk* chunks, int num_chunks,
                         const AdamWHyper& hyper, int64_t step, cudaStream_t stream, const GradNorm* norm) {
  const AdamWScalars s = checked_scalars(hyper, step, "adamw_update_chunks");
  require(num_chunks >= 0, "adamw_update_chunks: negative chunk count ", num_chunks);
  if (num_chunks == 0) return;
  // P = float when params is null: the kernels then never write it.
  dispatch_any2(grad_type, params ? param_type : DType::F32, [&](auto tg, auto tp) {
    using G = decltype(tg);
    using P = decltype(tp);
    launch(adamw_chunks_kernel<G, P>, unsigned(num_chunks), kBlock, 0, stream, "adamw_chunks_kernel", master, m, v,
           static_cast<const G*>(grads), grad_factor, static_cast<P*>(params), chunks, s, norm);
  });
}

}  // namespace zt::cuda
