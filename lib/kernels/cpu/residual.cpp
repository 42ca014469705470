#include "kernels/cpu/residual.hpp"

#include "kernels/cpu/kernel_profile.hpp"

namespace zt::cpu {

void residual_forward(float* out, const float* a, const float* b, size_t n) {
  KernelTimer timer(KernelKind::ResidualForward);
  const std::ptrdiff_t count = std::ptrdiff_t(n);
#pragma omp parallel for simd schedule(static)
  for (std::ptrdiff_t i = 0; i < count; i++) out[i] = a[i] + b[i];
}

void residual_backward(float* da, float* db, const float* dout, size_t n) {
  KernelTimer timer(KernelKind::ResidualBackward);
  const std::ptrdiff_t count = std::ptrdiff_t(n);
  if (da) {
#pragma omp parallel for simd schedule(static)
    for (std::ptrdiff_t i = 0; i < count; i++) da[i] += dout[i];
  }
  if (db) {
#pragma omp parallel for simd schedule(static)
    for (std::ptrdiff_t i = 0; i < count; i++) db[i] += dout[i];
  }
}

}  // namespace zt::cpu
