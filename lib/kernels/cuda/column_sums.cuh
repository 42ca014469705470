#pragma once
// Deterministic sums down the columns of a row-major [N, C] matrix (the bias gradient of a matmul,
// LayerNorm's weight and bias gradients), in two kernels and no atomics:
//   1. column_partials_kernel: block (x, y) sums rows [y·R, (y+1)·R) of columns [32x, 32x + 32);
//      lane tx of warp ty reads rows ty, ty + 32, ... of column 32x + tx (each warp reads whole
//      row segments, coalesced), then the 32 warps' sums meet in a fixed shared-memory tree.
//   2. column_finish_kernel: one thread per column adds the chunks' partials in chunk order and
//      accumulates the total into the output (in its own dtype, one rounding).
// K sums are formed at once from one pass over the rows (K = 2 for LayerNorm's dweight and dbias).
// The result depends on N, C and R only, never on timing.
#include "kernels/cuda/common.cuh"

namespace zt::cuda {

constexpr int kColumnTile = 32;  // columns per block, one per lane
constexpr int kRowLanes = 32;    // warps per block, each on its own rows
constexpr int kFinishBlock = 256;

template <int K, typename Term>
__global__ void __launch_bounds__(kColumnTile * kRowLanes)
    column_partials_kernel(float* partials, int N, int C, int rows_per_chunk, Term term) {
  __shared__ float sums[K][kRowLanes][kColumnTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int c = blockIdx.x * kColumnTile + tx;
  const int chunk = blockIdx.y;
  const int r0 = chunk * rows_per_chunk;
  const int r1 = min(N, r0 + rows_per_chunk);
  float acc[K];
#pragma unroll
  for (int k = 0; k < K; k++) acc[k] = 0.0f;
  if (c < C)
    for (int r = r0 + ty; r < r1; r += kRowLanes) term(r, c, acc);
#pragma unroll
  for (int k = 0; k < K; k++) sums[k][ty][tx] = acc[k];
  __syncthreads();
  for (int stride = kRowLanes / 2; stride > 0; stride /= 2) {
    if (ty < stride)
#pragma unroll
      for (int k = 0; k < K; k++) sums[k][ty][tx] += sums[k][ty + stride][tx];
    __syncthreads();
  }
  if (ty == 0 && c < C)
#pragma unroll
    for (int k = 0; k < K; k++) partials[(size_t(chunk) * K + k) * C + c] = sums[k][0][tx];
}

template <int K, typename T>
struct ColumnOutputs {
  T* out[K];  // each may be null (that sum is not wanted)
};

template <int K, typename T>
__global__ void column_finish_kernel(ColumnOutputs<K, T> outputs, const float* partials, int chunks, int C) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
#pragma unroll
  for (int k = 0; k < K; k++) {
    T* out = outputs.out[k];
    if (!out) continue;
    float total = 0.0f;
    for (int chunk = 0; chunk < chunks; chunk++) total += partials[(size_t(chunk) * K + k) * C + c];
    out[c] = from_float<T>(to_float(out[c]) + total);
  }
}

// Rows per chunk and chunk count for an [N, C] sum whose partials must fit in `capacity` floats
// (K·C·chunks); at least min_rows rows per chunk. Depends on N, C and capacity only.
struct ColumnChunking {
  int rows_per_chunk, chunks;
};

inline ColumnChunking column_chunking(int N, int C, int K, int min_rows, size_t capacity, const char* op) {
  const size_t per_chunk = size_t(K) * size_t(C);
  require(per_chunk <= capacity, op, ": ", C, " columns need more than the ", capacity, " floats of scratch");
  const size_t max_chunks = std::min<size_t>(capacity / per_chunk, 65535);  // gridDim.y limit
  size_t rows = size_t(min_rows);
  if (ceil_div(size_t(N), rows) > max_chunks) rows = ceil_div(size_t(N), max_chunks);
  const size_t chunks = ceil_div(size_t(N), rows);
  return {int(rows), int(chunks > 0 ? chunks : 1)};
}

// partials: K·C·chunking.chunks floats of device scratch.
template <int K, typename T, typename Term>
void column_sums(ColumnOutputs<K, T> outputs, float* partials, int N, int C, ColumnChunking chunking, Term term,
                 cudaStream_t stream) {
  if (N <= 0 || C <= 0) return;
  const dim3 grid(unsigned(ceil_div(size_t(C), kColumnTile)), unsigned(chunking.chunks));
  launch(column_partials_kernel<K, Term>, grid, dim3(kColumnTile, kRowLanes), 0, stream, "column_partials_kernel",
         partials, N, C, chunking.rows_per_chunk, term);
  launch(column_finish_kernel<K, T>, unsigned(ceil_div(size_t(C), kFinishBlock)), kFinishBlock, 0, stream,
         "column_finish_kernel", outputs, partials, chunking.chunks, C);
}

}  // namespace zt::cuda
