#include "kernels/cpu/matmul.hpp"

#include <algorithm>
#include <cstring>

#include "kernels/cpu/gemm.hpp"
#include "kernels/cpu/kernel_profile.hpp"

namespace zt::cpu {

void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int C, int OC,
                    WeightLayout layout) {
  KernelTimer timer(KernelKind::MatmulForward);
  // The bias is written first and the product accumulated onto it (beta = 1): one pass over out.
  float beta = 0.0f;
  if (bias) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) std::memcpy(out + size_t(n) * OC, bias, sizeof(float) * OC);
    beta = 1.0f;
  }
  if (layout == WeightLayout::InputMajor)
    gemm(Trans::No, Trans::No, N, OC, C, 1.0f, inp, C, weight, OC, beta, out, OC);
  else
    gemm(Trans::No, Trans::Yes, N, OC, C, 1.0f, inp, C, weight, C, beta, out, OC);
}

void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int N, int C, int OC, WeightLayout layout) {
  KernelTimer timer(KernelKind::MatmulBackward);
  const bool input_major = layout == WeightLayout::InputMajor;
  if (dinp) {
    if (input_major)  // dinp[N, C] += dout[N, OC] · W[C, OC]ᵀ
      gemm(Trans::No, Trans::Yes, N, C, OC, 1.0f, dout, OC, weight, OC, 1.0f, dinp, C);
    else  // dinp[N, C] += dout[N, OC] · W[OC, C]
      gemm(Trans::No, Trans::No, N, C, OC, 1.0f, dout, OC, weight, C, 1.0f, dinp, C);
  }
  if (dweight) {
    if (input_major)  // dW[C, OC] += inp[N, C]ᵀ · dout[N, OC]
      gemm(Trans::Yes, Trans::No, C, OC, N, 1.0f, inp, C, dout, OC, 1.0f, dweight, OC);
    else  // dW[OC, C] += dout[N, OC]ᵀ · inp[N, C]
      gemm(Trans::Yes, Trans::No, OC, C, N, 1.0f, dout, OC, inp, C, 1.0f, dweight, C);
  }
  if (dbias) {
    // Columns are split across threads and each sums its rows in order: the result does not
    // depend on the thread count.
    constexpr int kColumnBlock = 256;
    const int blocks = (OC + kColumnBlock - 1) / kColumnBlock;
#pragma omp parallel for schedule(static)
    for (int blk = 0; blk < blocks; blk++) {
      const int o0 = blk * kColumnBlock, o1 = std::min(OC, o0 + kColumnBlock);
      float acc[kColumnBlock] = {};
      for (int n = 0; n < N; n++) {
        const float* row = dout + size_t(n) * OC;
        for (int o = o0; o < o1; o++) acc[o - o0] += row[o];
      }
      for (int o = o0; o < o1; o++) dbias[o] += acc[o - o0];
    }
  }
}

}  // namespace zt::cpu
