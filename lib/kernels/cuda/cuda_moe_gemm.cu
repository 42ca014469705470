#include "kernels/cuda/cuda_moe_gemm.hpp"

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/mma.cuh"

namespace zt::cuda {

namespace {

// ---------------------------------------------------------------------------------------------
// Grouping: one block per expert, each thread a contiguous run of the N·K slots, so that a scan
// of the threads' counts keeps the slots' order.

constexpr int kGroupThreads = 256;

// The exclusive prefix sum of v over the block's threads (Hillis-Steele in shared memory), and
// the total in *total.
__device__ int block_exclusive_scan(int v, int* total) {
  __shared__ int scan[2][kGroupThreads];
  const int t = int(threadIdx.x);
  int from = 0;
  scan[0][t] = v;
  __syncthreads();
  for (int step = 1; step < kGroupThreads; step *= 2) {
    const int x = scan[from][t] + (t >= step ? scan[from][t - step] : 0);
    scan[1 - from][t] = x;
    from = 1 - from;
    __syncthreads();
  }
  *total = scan[from][kGroupThreads - 1];
  const int inclusive = scan[from][t];
  __syncthreads();  // the next scan writes over it
  return inclusive - v;
}

__global__ void moe_group_kernel(int32_t* offsets, int32_t* token, int32_t* row, const int32_t* experts, int N, int E,
                                 int K) {
  const int e = int(blockIdx.x);
  const int slots = N * K, per = int(ceil_div(size_t(slots), kGroupThreads));
  const int first = int(threadIdx.x) * per, end = min(first + per, slots);
  int below = 0, mine = 0;
  for (int i = first; i < end; i++) {
    below += experts[i] < e;
    mine += experts[i] == e;
  }
  int before_all = 0, all_mine = 0;
  block_exclusive_scan(below, &before_all);
  int r = before_all + block_exclusive_scan(mine, &all_mine);
  if (threadIdx.x == 0) {
    offsets[e] = before_all;
    if (e == E - 1) offsets[E] = before_all + all_mine;
  }
  for (int i = first; i < end; i++)
    if (experts[i] == e) {
      token[r] = i / K;
      row[i] = r++;
    }
}

// ---------------------------------------------------------------------------------------------
// The grouped GEMM: out tile [64, 64] = A [64, K] · Bᵀ, B [64, K] (both operands k-major in shared
// memory, whatever their layout in global memory).

constexpr int kTile = 64, kTileK = 32, kGemmThreads = 128;

// Shared memory rows: bf16 padded by 8 (pairs stay 4-byte aligned), fp32 by 1 (no bank conflicts
// along n).
template <typename T>
constexpr int kLd = kTileK + (sizeof(T) == 2 ? 8 : 1);

// Element (i, k) of an operand at p[i · si + k · sk], present for i < ni, k < nk.
template <typename T>
struct Operand {
  const T* p;
  size_t si, sk;
  int ni, nk;
};

// The [kTile, kTileK] slice at k0 into s[i · kLd + k], zeros outside the operand. kContigK: the
// operand is contiguous along k (consecutive threads read consecutive k), else along i.
template <bool kContigK, typename T>
__device__ void load_slice(T* s, const Operand<T>& a, int k0) {
  for (int idx = int(threadIdx.x); idx < kTile * kTileK; idx += kGemmThreads) {
    const int i = kContigK ? idx / kTileK : idx % kTile, k = kContigK ? idx % kTileK : idx / kTile;
    const int kk = k0 + k;
    s[i * kLd<T> + k] = i < a.ni && kk < a.nk ? a.p[size_t(i) * a.si + size_t(kk) * a.sk] : from_float<T>(0.0f);
  }
}

// Where the block's tile goes: out[i · ld + n] for i < rows, n < cols; added to what is there
// when `accumulate`.
template <typename T>
struct Target {
  T* p;
  size_t ld;
  int rows, cols;
  bool accumulate;
  __device__ void put(int i, int n, float v) const {
    if (i >= rows || n >= cols) return;
    T& o = p[size_t(i) * ld + size_t(n)];
    o = from_float<T>(accumulate ? to_float(o) + v : v);
  }
};

// fp32: thread t owns rows t / 8 + 16a and columns t % 8 + 8b of the tile.
template <bool kAContigK, bool kBContigK>
__device__ void tile_product(const Operand<float>& a, const Operand<float>& b, const Target<float>& out) {
  __shared__ float As[kTile * kLd<float>], Bs[kTile * kLd<float>];
  const int t = int(threadIdx.x), ti = t / 8, tn = t % 8;
  float acc[4][8] = {};
  for (int k0 = 0; k0 < a.nk; k0 += kTileK) {
    load_slice<kAContigK>(As, a, k0);
    load_slice<kBContigK>(Bs, b, k0);
    __syncthreads();
    for (int k = 0; k < kTileK; k++) {
      float bv[8];
#pragma unroll
      for (int j = 0; j < 8; j++) bv[j] = Bs[(tn + 8 * j) * kLd<float> + k];
#pragma unroll
      for (int i = 0; i < 4; i++) {
        const float av = As[(ti + 16 * i) * kLd<float> + k];
#pragma unroll
        for (int j = 0; j < 8; j++) acc[i][j] += av * bv[j];
      }
    }
    __syncthreads();
  }
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 8; j++) out.put(ti + 16 * i, tn + 8 * j, acc[i][j]);
}

// bf16: warp w owns the 32 x 32 quarter (w / 2, w % 2), 2 x 4 mma tiles of 16 x 8.
template <bool kAContigK, bool kBContigK>
__device__ void tile_product(const Operand<bf16>& a, const Operand<bf16>& b, const Target<bf16>& out) {
  __shared__ bf16 As[kTile * kLd<bf16>], Bs[kTile * kLd<bf16>];
  const int lane = int(threadIdx.x) % kWarpSize, w = int(threadIdx.x) / kWarpSize;
  const int g = lane / 4, q = lane % 4, wi = (w / 2) * 32, wn = (w % 2) * 32;
  float acc[2][4][4] = {};
  for (int k0 = 0; k0 < a.nk; k0 += kTileK) {
    load_slice<kAContigK>(As, a, k0);
    load_slice<kBContigK>(Bs, b, k0);
    __syncthreads();
    for (int ks = 0; ks < kTileK; ks += 16) {
      uint32_t af[2][4], bfr[4][2];
      for (int mi = 0; mi < 2; mi++) {
        const bf16* r0 = As + (wi + mi * 16 + g) * kLd<bf16> + ks + 2 * q;
        const bf16* r8 = r0 + 8 * kLd<bf16>;
        af[mi][0] = load_pair(r0);
        af[mi][1] = load_pair(r8);
        af[mi][2] = load_pair(r0 + 8);
        af[mi][3] = load_pair(r8 + 8);
      }
      for (int ni = 0; ni < 4; ni++) {
        const bf16* c = Bs + (wn + ni * 8 + g) * kLd<bf16> + ks + 2 * q;
        bfr[ni][0] = load_pair(c);
        bfr[ni][1] = load_pair(c + 8);
      }
      for (int mi = 0; mi < 2; mi++)
        for (int ni = 0; ni < 4; ni++) mma_bf16_16816(acc[mi][ni], af[mi], bfr[ni]);
    }
    __syncthreads();
  }
  for (int mi = 0; mi < 2; mi++)
    for (int ni = 0; ni < 4; ni++)
      for (int h = 0; h < 4; h++)
        out.put(wi + mi * 16 + g + (h >= 2 ? 8 : 0), wn + ni * 8 + 2 * q + h % 2, acc[mi][ni][h]);
}

// The row tile `tile` of the launch (tiles numbered expert by expert): its expert and first row,
// false past the last.
__device__ bool find_row_tile(const int32_t* offsets, int E, int tile, int& e, int& row0, int& rows) {
  int before = 0;
  for (e = 0; e < E; e++) {
    const int n = offsets[e + 1] - offsets[e], tiles = (n + kTile - 1) / kTile;
    if (tile < before + tiles) {
      row0 = offsets[e] + (tile - before) * kTile;
      rows = min(kTile, offsets[e + 1] - row0);
      return true;
    }
    before += tiles;
  }
  return false;
}

// out [R, OC] = in [R, C] · W_eᵀ: grid (row tiles, OC tiles).
template <typename T>
__global__ void __launch_bounds__(kGemmThreads)
    moe_expert_forward_kernel(T* out, const T* in, const T* weight, size_t stride, const int32_t* offsets, int E, int C,
                              int OC) {
  int e, row0, rows;
  if (!find_row_tile(offsets, E, int(blockIdx.x), e, row0, rows)) return;
  const int n0 = int(blockIdx.y) * kTile;
  const Operand<T> a{in + size_t(row0) * C, size_t(C), 1, rows, C};
  const Operand<T> b{weight + size_t(e) * stride + size_t(n0) * C, size_t(C), 1, min(kTile, OC - n0), C};
  tile_product<true, true>(a, b, Target<T>{out + size_t(row0) * OC + n0, size_t(OC), rows, min(kTile, OC - n0), false});
}

// dinp [R, C] (+)= dout [R, OC] · W_e: grid (row tiles, C tiles).
template <typename T>
__global__ void __launch_bounds__(kGemmThreads)
    moe_expert_dinp_kernel(T* dinp, const T* dout, const T* weight, size_t stride, const int32_t* offsets, int E, int C,
                           int OC, bool accumulate) {
  int e, row0, rows;
  if (!find_row_tile(offsets, E, int(blockIdx.x), e, row0, rows)) return;
  const int n0 = int(blockIdx.y) * kTile;
  const Operand<T> a{dout + size_t(row0) * OC, size_t(OC), 1, rows, OC};
  const Operand<T> b{weight + size_t(e) * stride + n0, 1, size_t(C), min(kTile, C - n0), OC};
  tile_product<true, false>(a, b,
                            Target<T>{dinp + size_t(row0) * C + n0, size_t(C), rows, min(kTile, C - n0), accumulate});
}

// dW_e [OC, C] += dout_eᵀ · in_e over expert e's rows: grid (C tiles, OC tiles, E).
template <typename T>
__global__ void __launch_bounds__(kGemmThreads)
    moe_expert_dweight_kernel(T* dweight, const T* dout, const T* in, size_t stride, const int32_t* offsets, int C,
                              int OC) {
  const int e = int(blockIdx.z), first = offsets[e], rows = offsets[e + 1] - first;
  if (rows == 0) return;
  const int n0 = int(blockIdx.x) * kTile, m0 = int(blockIdx.y) * kTile;
  const Operand<T> a{dout + size_t(first) * OC + m0, 1, size_t(OC), min(kTile, OC - m0), rows};
  const Operand<T> b{in + size_t(first) * C + n0, 1, size_t(C), min(kTile, C - n0), rows};
  tile_product<false, false>(a, b,
                             Target<T>{dweight + size_t(e) * stride + size_t(m0) * C + n0, size_t(C),
                                       min(kTile, OC - m0), min(kTile, C - n0), true});
}

void check_experts(const char* op, int E, int R, int C, int OC) {
  require(E > 0 && R >= 0 && C > 0 && OC > 0, op, ": bad shape E = ", E, ", R = ", R, ", C = ", C, ", OC = ", OC);
}

// Row tiles enough for any split of R rows among E experts.
unsigned row_tiles(int R, int E, const char* op) { return grid_size(size_t(R) + size_t(E) * (kTile - 1), kTile, op); }

unsigned tiles(int n) { return unsigned(ceil_div(size_t(n), kTile)); }

}  // namespace

void moe_group(int32_t* offsets, int32_t* token, int32_t* row, const int32_t* experts, int N, int E, int K,
               cudaStream_t stream) {
  require(N >= 0 && E > 0 && K > 0 && K <= E, "moe_group: bad shape N = ", N, ", E = ", E, ", K = ", K);
  launch(moe_group_kernel, dim3(unsigned(E)), kGroupThreads, 0, stream, "moe_group_kernel", offsets, token, row,
         experts, N, E, K);
}

void moe_expert_forward(DType dt, void* out, const void* in, const void* weight, size_t stride, const int32_t* offsets,
                        int E, int R, int C, int OC, cudaStream_t stream) {
  check_experts("moe_expert_forward", E, R, C, OC);
  if (R == 0) return;
  dispatch_activation(dt, "moe_expert_forward", [&](auto tag) {
    using T = decltype(tag);
    launch(moe_expert_forward_kernel<T>, dim3(row_tiles(R, E, "moe_expert_forward"), tiles(OC)), kGemmThreads, 0,
           stream, "moe_expert_forward_kernel", static_cast<T*>(out), static_cast<const T*>(in),
           static_cast<const T*>(weight), stride, offsets, E, C, OC);
  });
}

void moe_expert_backward(DType dt, void* dinp, void* dweight, const void* dout, const void* in, const void* weight,
                         size_t stride, const int32_t* offsets, int E, int R, int C, int OC, GradInto dinp_into,
                         cudaStream_t stream) {
  check_experts("moe_expert_backward", E, R, C, OC);
  if (R == 0) return;
  dispatch_activation(dt, "moe_expert_backward", [&](auto tag) {
    using T = decltype(tag);
    if (dinp)
      launch(moe_expert_dinp_kernel<T>, dim3(row_tiles(R, E, "moe_expert_backward"), tiles(C)), kGemmThreads, 0, stream,
             "moe_expert_dinp_kernel", static_cast<T*>(dinp), static_cast<const T*>(dout),
             static_cast<const T*>(weight), stride, offsets, E, C, OC, dinp_into == GradInto::Accumulate);
    if (dweight)
      launch(moe_expert_dweight_kernel<T>, dim3(tiles(C), tiles(OC), unsigned(E)), kGemmThreads, 0, stream,
             "moe_expert_dweight_kernel", static_cast<T*>(dweight), static_cast<const T*>(dout),
             static_cast<const T*>(in), stride, offsets, C, OC);
  });
}

}  // namespace zt::cuda
