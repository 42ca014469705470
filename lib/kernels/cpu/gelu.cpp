#include "kernels/cpu/gelu.hpp"

#include <algorithm>

#include "kernels/cpu/kernel_profile.hpp"
#include "kernels/cpu/gelu_simd.hpp"

namespace zt::cpu {

namespace {

constexpr size_t kChunk = 4096;  // elements per OpenMP work item

ZT_KERNEL_CLONES void gelu_forward_chunk(float* out, const float* inp, size_t n) {
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) store(out + i, gelu(load(inp + i)));
  if (i < n) store_partial(out + i, gelu(load_partial(inp + i, n - i, 0.0f)), n - i);
}

ZT_KERNEL_CLONES void gelu_backward_chunk(float* dinp, const float* inp, const float* dout, size_t n) {
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) store(dinp + i, load(dinp + i) + gelu_grad(load(inp + i)) * load(dout + i));
  if (i < n) {
    const size_t k = n - i;
    const f32x16 d =
        load_partial(dinp + i, k, 0.0f) + gelu_grad(load_partial(inp + i, k, 0.0f)) * load_partial(dout + i, k, 0.0f);
    store_partial(dinp + i, d, k);
  }
}

}  // namespace

void gelu_forward(float* out, const float* inp, size_t n) {
  KernelTimer timer(KernelKind::GeluForward);
  const std::ptrdiff_t chunks = std::ptrdiff_t((n + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t c = 0; c < chunks; c++) {
    const size_t begin = size_t(c) * kChunk;
    gelu_forward_chunk(out + begin, inp + begin, std::min(kChunk, n - begin));
  }
}

void gelu_backward(float* dinp, const float* inp, const float* dout, size_t n) {
  KernelTimer timer(KernelKind::GeluBackward);
  const std::ptrdiff_t chunks = std::ptrdiff_t((n + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t c = 0; c < chunks; c++) {
    const size_t begin = size_t(c) * kChunk;
    gelu_backward_chunk(dinp + begin, inp + begin, dout + begin, std::min(kChunk, n - begin));
  }
}

}  // namespace zt::cpu
