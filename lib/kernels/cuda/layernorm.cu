#include "kernels/cuda/layernorm.hpp"

#include "kernels/cuda/layernorm_kernels.cuh"

namespace zt::cuda {

using namespace layernorm_kernels;

namespace {

ColumnChunking param_grad_chunking(int N, int C) {
  const size_t chunks = ceil_div(size_t(N), kRowsPerChunk);
  return column_chunking(N, C, 2, kRowsPerChunk, 2 * size_t(C) * (chunks > 0 ? chunks : 1), "layernorm_backward");
}

void check_shape(int N, int C, const char* op) {
  require(N >= 0 && C > 0, op, ": bad shape N = ", N, ", C = ", C);
  require(ceil_div(size_t(N), kRowsPerChunk) <= 65535, op, ": N = ", N, " rows exceed ", 65535 * kRowsPerChunk,
          " (the grid of the parameter-gradient sums)");
}

}  // namespace

void layernorm_forward(DType dt, void* out, float* mean, float* rstd, const void* inp, const void* weight,
                       const void* bias, int N, int C, cudaStream_t stream) {
  check_shape(N, C, "layernorm_forward");
  if (N == 0) return;
  const unsigned grid = grid_size(size_t(N), kWarpsPerBlock, "layernorm_forward");
  const bool vector =
      C % kVec == 0 && aligned16(out) && aligned16(inp) && aligned16(weight) && aligned16(bias);
  dispatch_activation(dt, "layernorm_forward", [&](auto tag) {
    using T = decltype(tag);
    launch(vector ? layernorm_forward_kernel<T, true> : layernorm_forward_kernel<T, false>, grid,
           kWarpsPerBlock * kWarpSize, 0, stream, "layernorm_forward_kernel", static_cast<T*>(out), mean, rstd,
           static_cast<const T*>(inp), static_cast<const T*>(weight), static_cast<const T*>(bias), N, C);
  });
}

size_t layernorm_backward_scratch_floats(int N, int C) {
  check_shape(N, C, "layernorm_backward_scratch_floats");
  return 2 * size_t(C) * size_t(param_grad_chunking(N, C).chunks);
}

void layernorm_backward(DType dt, void* dinp, void* dweight, void* dbias, float* scratch, const void* dout,
                        const void* inp, const void* weight, const float* mean, const float* rstd, int N, int C,
                        cudaStream_t stream) {
  check_shape(N, C, "layernorm_backward");
  if (N == 0) return;
  const unsigned grid = grid_size(size_t(N), kWarpsPerBlock, "layernorm_backward");
  const bool vector = C % kVec == 0 && aligned16(dinp) && aligned16(dout) && aligned16(inp) && aligned16(weight);
  dispatch_activation(dt, "layernorm_backward", [&](auto tag) {
    using T = decltype(tag);
    auto* dy = static_cast<const T*>(dout);
    auto* x = static_cast<const T*>(inp);
    if (dinp)
      launch(vector ? layernorm_backward_dinp_kernel<T, true> : layernorm_backward_dinp_kernel<T, false>, grid,
             kWarpsPerBlock * kWarpSize, 0, stream, "layernorm_backward_dinp_kernel", static_cast<T*>(dinp), dy, x,
             static_cast<const T*>(weight), mean, rstd, N, C);
    if (dweight || dbias) {
      require(scratch != nullptr, "layernorm_backward: scratch is null (layernorm_backward_scratch_floats floats)");
      const ColumnOutputs<2, T> outputs{{static_cast<T*>(dweight), static_cast<T*>(dbias)}};
      column_sums(outputs, scratch, N, C, param_grad_chunking(N, C), LayerNormParamGradTerm<T>{x, dy, mean, rstd, C},
                  stream);
    }
  });
}

}  // namespace zt::cuda
