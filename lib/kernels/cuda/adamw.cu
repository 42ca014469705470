#include "kernels/cuda/adamw.hpp"

#include "kernels/cuda/adamw_kernels.cuh"

namespace zt::cuda {

using namespace adamw_kernels;

namespace {

// Calls f(G{}, P{}) for the gradient type and the parameter type (P = float when params is null;
// the kernels then never write it).
template <typename F>
void with_types(DType grad_type, DType param_type, F&& f) {
  dispatch_any(grad_type, [&](auto g) { dispatch_any(param_type, [&](auto p) { f(g, p); }); });
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
  with_types(grad_type, params ? param_type : DType::F32, [&](auto tg, auto tp) {
    using G = decltype(tg);
    using P = decltype(tp);
    launch(adamw_range_kernel<G, P>, grid, kBlock, 0, stream, "adamw_range_kernel", master, m, v,
           static_cast<const G*>(grads), grad_factor, static_cast<P*>(params), n, s, decay);
  });
}

void adamw_update_chunks(float* master, float* m, float* v, const void* grads, DType grad_type, float grad_factor,
                         void* params, DType param_type, const AdamWChunk* chunks, int num_chunks,
                         const AdamWHyper& hyper, int64_t step, cudaStream_t stream) {
  const AdamWScalars s = checked_scalars(hyper, step, "adamw_update_chunks");
  require(num_chunks >= 0, "adamw_update_chunks: negative chunk count ", num_chunks);
  if (num_chunks == 0) return;
  with_types(grad_type, params ? param_type : DType::F32, [&](auto tg, auto tp) {
    using G = decltype(tg);
    using P = decltype(tp);
    launch(adamw_chunks_kernel<G, P>, unsigned(num_chunks), kBlock, 0, stream, "adamw_chunks_kernel", master, m, v,
           static_cast<const G*>(grads), grad_factor, static_cast<P*>(params), chunks, s);
  });
}

}  // namespace zt::cuda
