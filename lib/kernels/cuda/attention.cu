#include "kernels/cuda/attention.hpp"

#include <cmath>

#include "kernels/cuda/attention_kernels.cuh"

namespace zt::cuda {

using namespace attention_kernels;

namespace {

struct Shape {
  int B, T, C, NH, hs;
};

Shape check_shape(int B, int T, int C, int NH, const char* op) {
  require(B >= 0 && T >= 0 && C > 0 && NH > 0, op, ": bad shape B = ", B, ", T = ", T, ", C = ", C, ", NH = ", NH);
  require(C % NH == 0, op, ": C = ", C, " is not a multiple of NH = ", NH);
  const int hs = C / NH;
  require(hs <= kAttentionMaxHeadSize, op, ": head size ", hs, " exceeds ", kAttentionMaxHeadSize);
  require(NH <= 65535 && B <= 65535, op, ": NH = ", NH, " and B = ", B, " must be at most 65535 (grid y and z)");
  require(size_t(B) * T * 3 * size_t(C) < (size_t(1) << 62), op, ": qkv too large");
  return {B, T, C, NH, hs};
}

Dims dims_of(const Shape& s) { return {s.T, s.C, s.NH, s.hs, 1.0f / std::sqrt(float(s.hs))}; }

// Raises the kernel's dynamic shared memory limit to `bytes` (above 48 KB needs the opt-in).
template <typename Kernel>
void allow_shared_memory(Kernel kernel, size_t bytes, const char* op) {
  int device = 0, limit = 0;
  ZT_CUDA_CHECK(cudaGetDevice(&device));
  ZT_CUDA_CHECK(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  require(bytes <= size_t(limit), op, ": needs ", bytes, " bytes of shared memory per block, the device allows ",
          limit);
  ZT_CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     int(bytes)));
}

// Calls f.template operator()<HS, R>() for the smallest compiled head size that holds hs.
template <typename F>
void dispatch_head_size(int hs, F&& f) {
  if (hs <= 32)
    f(std::integral_constant<int, 32>{}, std::integral_constant<int, 4>{});
  else if (hs <= 64)
    f(std::integral_constant<int, 64>{}, std::integral_constant<int, 4>{});
  else
    f(std::integral_constant<int, 128>{}, std::integral_constant<int, 2>{});
}

}  // namespace

void attention_forward(DType dt, void* out, float* lse, const void* qkv, int B, int T, int C, int NH,
                       cudaStream_t stream) {
  const Shape s = check_shape(B, T, C, NH, "attention_forward");
  if (B == 0 || T == 0) return;
  const Dims dims = dims_of(s);
  dispatch_activation(dt, "attention_forward", [&](auto tag) {
    using E = decltype(tag);
    dispatch_head_size(s.hs, [&](auto hs_c, auto r_c) {
      constexpr int HS = decltype(hs_c)::value, R = decltype(r_c)::value;
      using G = Tiles<HS, R>;
      const size_t bytes = G::forward_floats() * sizeof(float);
      auto kernel = attention_forward_kernel<E, HS, R>;
      allow_shared_memory(kernel, bytes, "attention_forward");
      const dim3 grid(unsigned(ceil_div(size_t(T), G::kTile)), unsigned(NH), unsigned(B));
      launch(kernel, grid, kThreads, bytes, stream, "attention_forward_kernel", static_cast<E*>(out), lse,
             static_cast<const E*>(qkv), dims);
    });
  });
}

size_t attention_backward_scratch_floats(int B, int T, int NH) {
  require(B >= 0 && T >= 0 && NH > 0, "attention_backward_scratch_floats: bad shape B = ", B, ", T = ", T,
          ", NH = ", NH);
  return size_t(B) * NH * T;
}

void attention_backward(DType dt, void* dqkv, float* scratch, const void* dout, const void* qkv, const void* out,
                        const float* lse, int B, int T, int C, int NH, cudaStream_t stream) {
  const Shape s = check_shape(B, T, C, NH, "attention_backward");
  if (B == 0 || T == 0) return;
  require(scratch != nullptr, "attention_backward: scratch is null (attention_backward_scratch_floats floats)");
  const Dims dims = dims_of(s);
  dispatch_activation(dt, "attention_backward", [&](auto tag) {
    using E = decltype(tag);
    auto* dx = static_cast<E*>(dqkv);
    auto* dy = static_cast<const E*>(dout);
    auto* x = static_cast<const E*>(qkv);
    const size_t rows = size_t(B) * T * NH;
    launch(attention_backward_dot_kernel<E>, grid_size(rows, kDotWarpsPerBlock, "attention_backward"),
           kDotWarpsPerBlock * kWarpSize, 0, stream, "attention_backward_dot_kernel", scratch, dy,
           static_cast<const E*>(out), B, dims);
    dispatch_head_size(s.hs, [&](auto hs_c, auto r_c) {
      constexpr int HS = decltype(hs_c)::value, R = decltype(r_c)::value;
      using G = Tiles<HS, R>;
      const dim3 grid(unsigned(ceil_div(size_t(T), G::kTile)), unsigned(NH), unsigned(B));
      const size_t kv_bytes = G::kv_floats() * sizeof(float);
      auto kv_kernel = attention_backward_kv_kernel<E, HS, R>;
      allow_shared_memory(kv_kernel, kv_bytes, "attention_backward");
      launch(kv_kernel, grid, kThreads, kv_bytes, stream, "attention_backward_kv_kernel", dx, dy, x, lse, scratch,
             dims);
      const size_t q_bytes = G::q_floats() * sizeof(float);
      auto q_kernel = attention_backward_q_kernel<E, HS, R>;
      allow_shared_memory(q_kernel, q_bytes, "attention_backward");
      launch(q_kernel, grid, kThreads, q_bytes, stream, "attention_backward_q_kernel", dx, dy, x, lse, scratch,
             dims);
    });
  });
}

}  // namespace zt::cuda
