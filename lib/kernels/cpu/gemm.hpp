#pragma once
// Row-major single-precision GEMM through oneDNN (dnnl_sgemm), which picks its kernels by CPU
// feature at run time: C[M, N] = alpha · op(A) · op(B) + beta · C.
namespace zt::cpu {

enum class Trans : bool { No = false, Yes = true };

// op(A) is M x K (A stored K x M when trans_a), op(B) is K x N (B stored N x K when trans_b).
// lda/ldb/ldc are the row strides of the matrices as stored. Called inside an OpenMP parallel
// region it runs on the calling thread only. Throws zt::Error if oneDNN rejects the call.
void gemm(Trans trans_a, Trans trans_b, int M, int N, int K, float alpha, const float* A, int lda,
          const float* B, int ldb, float beta, float* C, int ldc);

}  // namespace zt::cpu
