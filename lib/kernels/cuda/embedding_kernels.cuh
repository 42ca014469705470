#pragma once
// Embedding kernels (embedding.hpp).
#include "kernels/cuda/common.cuh"

namespace zt::cuda::embedding_kernels {

constexpr int kBlock = 256;
constexpr int kRunBlock = 128;  // threads per run of equal tokens (8 channels each)

template <typename T, bool kVector>
__global__ void embedding_forward_kernel(T* out, const int32_t* tokens, const T* wte, const T* wpe, int N, int T_,
                                         int C, int V) {
  const int groups = (C + kVec - 1) / kVec;
  const size_t idx = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= size_t(N) * groups) return;
  const int bt = int(idx / groups);
  const int c = int(idx % groups) * kVec;
  const int token = tokens[bt];
  float x[kVec];
  if (token >= 0 && token < V) {
    float p[kVec];
    load_floats<kVector>(x, wte + size_t(token) * C, size_t(c), size_t(C));
    load_floats<kVector>(p, wpe + size_t(bt % T_) * C, size_t(c), size_t(C));
#pragma unroll
    for (int k = 0; k < kVec; k++) x[k] += p[k];
  } else {
#pragma unroll
    for (int k = 0; k < kVec; k++) x[k] = NAN;
  }
  store_floats<kVector>(out + size_t(bt) * C, x, size_t(c), size_t(C));
}

__global__ void iota_kernel(int32_t* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = i;
}

// Block i starts at sorted position i; it works only when i begins a run of equal tokens, and then
// adds the run's dout rows (positions ascending) onto the token's dwte row.
template <typename T, bool kVector>
__global__ void dwte_kernel(T* dwte, const T* dout, const uint32_t* tokens_sorted, const int32_t* positions, int N,
                            int C, int V) {
  const int i = blockIdx.x;
  const uint32_t token = tokens_sorted[i];
  if (i > 0 && tokens_sorted[i - 1] == token) return;
  if (token >= uint32_t(V)) return;  // negative tokens read as large unsigned values
  int end = i + 1;
  while (end < N && tokens_sorted[end] == token) end++;
  T* row = dwte + size_t(token) * C;
  for (int c = threadIdx.x * kVec; c < C; c += blockDim.x * kVec) {
    float acc[kVec];
    load_floats<kVector>(acc, row, size_t(c), size_t(C));
    for (int p = i; p < end; p++) {
      float g[kVec];
      load_floats<kVector>(g, dout + size_t(positions[p]) * C, size_t(c), size_t(C));
#pragma unroll
      for (int k = 0; k < kVec; k++) acc[k] += g[k];
    }
    store_floats<kVector>(row, acc, size_t(c), size_t(C));
  }
}

template <typename T, bool kVector>
__global__ void dwpe_kernel(T* dwpe, const T* dout, int B, int T_, int C) {
  const int groups = (C + kVec - 1) / kVec;
  const size_t idx = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= size_t(T_) * groups) return;
  const int t = int(idx / groups);
  const int c = int(idx % groups) * kVec;
  float acc[kVec];
  load_floats<kVector>(acc, dwpe + size_t(t) * C, size_t(c), size_t(C));
  for (int b = 0; b < B; b++) {
    float g[kVec];
    load_floats<kVector>(g, dout + (size_t(b) * T_ + t) * C, size_t(c), size_t(C));
#pragma unroll
    for (int k = 0; k < kVec; k++) acc[k] += g[k];
  }
  store_floats<kVector>(dwpe + size_t(t) * C, acc, size_t(c), size_t(C));
}

}  // namespace zt::cuda::embedding_kernels
