#include "kernels/cpu/gemm.hpp"

#include <oneapi/dnnl/dnnl.h>

#include "core/error.hpp"

namespace zt::cpu {

void gemm(Trans trans_a, Trans trans_b, int M, int N, int K, float alpha, const float* A, int lda,
          const float* B, int ldb, float beta, float* C, int ldc) {
  if (M == 0 || N == 0) return;
  dnnl_status_t status = dnnl_sgemm(trans_a == Trans::Yes ? 'T' : 'N', trans_b == Trans::Yes ? 'T' : 'N', M,
                                    N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  if (status != dnnl_success)
    fail("dnnl_sgemm failed (status {}) for M={} N={} K={} lda={} ldb={} ldc={} trans_a={} trans_b={}",
         int(status), M, N, K, lda, ldb, ldc, trans_a == Trans::Yes, trans_b == Trans::Yes);
}

}  // namespace zt::cpu
