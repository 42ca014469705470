#include "kernels/cuda/attention.hpp"

#include <cmath>

#include "kernels/cuda/common.cuh"

namespace zt::cuda {

namespace {

constexpr int kSide = 16;                   // the block is a kSide x kSide grid of threads
constexpr int kThreads = kSide * kSide;     // 256
constexpr int kDotWarpsPerBlock = 8;        // attention_backward_dot_kernel

// Tile geometry for a compiled head size HS (the runtime head size is at most HS; the columns past
// it hold zeros) and R rows per thread in each direction.
template <int HS, int R>
struct Tiles {
  static constexpr int kTile = kSide * R;    // rows of a query or key tile
  static constexpr int kLd = HS + 1;         // padded row of a [tile, HS] matrix in shared memory
  static constexpr int kLdP = kTile + 1;     // padded row of a [tile, tile] matrix
  static constexpr int kCols = HS / kSide;   // head channels per thread
  static_assert(HS % kSide == 0, "head tiles are split over 16 lanes");
  static constexpr size_t forward_floats() { return 3 * size_t(kTile) * kLd + size_t(kTile) * kLdP; }
  static constexpr size_t kv_floats() { return 4 * size_t(kTile) * kLd + 2 * size_t(kTile) * kLdP + 2 * kTile; }
  static constexpr size_t q_floats() { return 4 * size_t(kTile) * kLd + size_t(kTile) * kLdP + 2 * kTile; }
};

// Shapes shared by the kernels.
struct Dims {
  int T, C, NH, hs;
  float scale;  // 1/√hs
};

// dst[r, d] = the head's channel d of row (row0 + r): src[(row0 + r)·stride + d] as fp32, 0 for
// rows past T and channels past hs. Consecutive threads take consecutive channels (coalesced).
template <int HS, int kTile, typename T>
__device__ void load_tile(float* dst, const T* src, int row0, int T_, size_t stride, int hs) {
  for (int e = threadIdx.x; e < kTile * HS; e += blockDim.x) {
    const int r = e / HS, d = e % HS;
    const int t = row0 + r;
    dst[r * (HS + 1) + d] = t < T_ && d < hs ? to_float(src[size_t(t) * stride + d]) : 0.0f;
  }
}

// dst[r] = src[row0 + r], 0 past T.
template <int kTile>
__device__ void load_rows(float* dst, const float* src, int row0, int T_) {
  for (int r = threadIdx.x; r < kTile; r += blockDim.x) dst[r] = row0 + r < T_ ? src[row0 + r] : 0.0f;
}

// acc[i][j] += Σ_d a[(ty + 16i), d] · b[(tx + 16j), d] over two [tile, HS] shared matrices.
template <int HS, int R>
__device__ __forceinline__ void tile_dot(float (&acc)[R][R], const float* a, const float* b, int ty, int tx) {
  constexpr int kLd = HS + 1;
#pragma unroll 4
  for (int d = 0; d < HS; d++) {
    float av[R], bv[R];
#pragma unroll
    for (int i = 0; i < R; i++) av[i] = a[(ty + kSide * i) * kLd + d];
#pragma unroll
    for (int j = 0; j < R; j++) bv[j] = b[(tx + kSide * j) * kLd + d];
#pragma unroll
    for (int i = 0; i < R; i++)
#pragma unroll
      for (int j = 0; j < R; j++) acc[i][j] += av[i] * bv[j];
  }
}

// acc[i][j] += Σ_c p[(ty + 16i), c] · m[c, (tx + 16j)]: a [tile, tile] shared matrix (rows kLdP
// apart) times a [tile, HS] one (rows kLd apart), as the forward's p·v and the backward's ds·k.
template <int HS, int R>
__device__ __forceinline__ void tile_times_head(float (&acc)[R][HS / kSide], const float* p, const float* m, int ty,
                                                int tx) {
  using G = Tiles<HS, R>;
  for (int c = 0; c < G::kTile; c++) {
    float pv[R];
#pragma unroll
    for (int i = 0; i < R; i++) pv[i] = p[(ty + kSide * i) * G::kLdP + c];
#pragma unroll
    for (int j = 0; j < G::kCols; j++) {
      const float v = m[c * G::kLd + tx + kSide * j];
#pragma unroll
      for (int i = 0; i < R; i++) acc[i][j] += pv[i] * v;
    }
  }
}

// Max and sum over the 16 lanes that share a row (lanes differing in their low 4 bits).
__device__ __forceinline__ float row_max16(float v) {
#pragma unroll
  for (int o = kSide / 2; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, o));
  return v;
}
__device__ __forceinline__ float row_sum16(float v) {
#pragma unroll
  for (int o = kSide / 2; o > 0; o >>= 1) v += __shfl_xor_sync(kFullMask, v, o);
  return v;
}

template <typename T, int HS, int R>
__global__ void __launch_bounds__(kThreads) attention_forward_kernel(T* out, float* lse, const T* qkv, Dims dims) {
  using G = Tiles<HS, R>;
  constexpr int kTile = G::kTile, kLd = G::kLd, kLdP = G::kLdP, kCols = G::kCols;
  float* smem = dynamic_shared_memory<float>();
  float* sQ = smem;
  float* sK = sQ + kTile * kLd;
  float* sV = sK + kTile * kLd;
  float* sP = sV + kTile * kLd;  // [kTile, kLdP] probabilities of the current key tile

  const int T_ = dims.T, C = dims.C, hs = dims.hs;
  const int qt = gridDim.x - 1 - blockIdx.x;  // the longest rows (most key tiles) start first
  const int h = blockIdx.y, b = blockIdx.z;
  const int tx = threadIdx.x % kSide, ty = threadIdx.x / kSide;
  const int q0 = qt * kTile;
  const size_t stride = 3 * size_t(C);
  const T* q_src = qkv + size_t(b) * T_ * stride + size_t(h) * hs;
  const T* k_src = q_src + C;
  const T* v_src = q_src + 2 * C;
  load_tile<HS, kTile>(sQ, q_src, q0, T_, stride, hs);

  float m[R], l[R], o[R][kCols];
#pragma unroll
  for (int i = 0; i < R; i++) {
    m[i] = -INFINITY;
    l[i] = 0.0f;
#pragma unroll
    for (int j = 0; j < kCols; j++) o[i][j] = 0.0f;
  }

  const int q_end = min(T_, q0 + kTile);
  const int key_tiles = (q_end - 1) / kTile + 1;  // keys 0 .. q_end - 1
  for (int kt = 0; kt < key_tiles; kt++) {
    const int k0 = kt * kTile;
    __syncthreads();  // the previous tile's sK, sV, sP are no longer read
    load_tile<HS, kTile>(sK, k_src, k0, T_, stride, hs);
    load_tile<HS, kTile>(sV, v_src, k0, T_, stride, hs);
    __syncthreads();

    float s[R][R] = {};
    tile_dot<HS, R>(s, sQ, sK, ty, tx);
#pragma unroll
    for (int i = 0; i < R; i++) {
      const int q = q0 + ty + kSide * i;
      float tile_max = -INFINITY;
#pragma unroll
      for (int j = 0; j < R; j++) {
        const int k = k0 + tx + kSide * j;
        s[i][j] = k <= q && k < T_ ? s[i][j] * dims.scale : -INFINITY;
        tile_max = fmaxf(tile_max, s[i][j]);
      }
      const float m_new = fmaxf(m[i], row_max16(tile_max));
      // alpha rescales what the row held; a row that has seen only masked scores keeps 0s.
      const float alpha = m_new == -INFINITY ? 1.0f : expf(m[i] - m_new);
      float row_sum = 0.0f;
#pragma unroll
      for (int j = 0; j < R; j++) {
        const float p = s[i][j] == -INFINITY ? 0.0f : expf(s[i][j] - m_new);
        sP[(ty + kSide * i) * kLdP + tx + kSide * j] = p;
        row_sum += p;
      }
      l[i] = l[i] * alpha + row_sum16(row_sum);
      m[i] = m_new;
#pragma unroll
      for (int j = 0; j < kCols; j++) o[i][j] *= alpha;
    }
    __syncwarp();  // a row of sP is written and read only by the 16 lanes of one warp

    tile_times_head<HS, R>(o, sP, sV, ty, tx);
  }

#pragma unroll
  for (int i = 0; i < R; i++) {
    const int q = q0 + ty + kSide * i;
    if (q >= T_) continue;
    const float inv = 1.0f / l[i];
    T* dst = out + (size_t(b) * T_ + q) * C + size_t(h) * hs;
#pragma unroll
    for (int j = 0; j < kCols; j++) {
      const int d = tx + kSide * j;
      if (d < hs) dst[d] = from_float<T>(o[i][j] * inv);
    }
    if (tx == 0) lse[(size_t(b) * dims.NH + h) * T_ + q] = m[i] + logf(l[i]);
  }
}

// D[b, h, t] = Σ_d dout[b, t, h·hs + d] · out[b, t, h·hs + d]: one warp per (b, t, h).
template <typename T>
__global__ void attention_backward_dot_kernel(float* D, const T* dout, const T* out, int B, Dims dims) {
  const size_t row = size_t(blockIdx.x) * kDotWarpsPerBlock + threadIdx.x / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  if (row >= size_t(B) * dims.T * dims.NH) return;
  const int h = int(row % dims.NH);
  const size_t bt = row / dims.NH;
  const size_t offset = bt * dims.C + size_t(h) * dims.hs;
  float s = 0.0f;
  for (int d = lane; d < dims.hs; d += kWarpSize) s += to_float(dout[offset + d]) * to_float(out[offset + d]);
  s = warp_sum(s);
  const size_t b = bt / dims.T, t = bt % dims.T;
  if (lane == 0) D[(b * dims.NH + h) * dims.T + t] = s;
}

// For the query rows a = ty + 16i and key columns c = tx + 16j of a (query tile, key tile) pair:
// p = softmax probability (recomputed from lse), ds = p·(dp - D) with dp = dout·vᵀ.
template <int HS, int R>
__device__ __forceinline__ void probabilities_and_dscores(float (&p)[R][R], float (&ds)[R][R], const float* sQ,
                                                          const float* sdO, const float* sK, const float* sV,
                                                          const float* sL, const float* sD, int q0, int k0,
                                                          const Dims& dims, int ty, int tx) {
  float s[R][R] = {}, dp[R][R] = {};
  tile_dot<HS, R>(s, sQ, sK, ty, tx);
  tile_dot<HS, R>(dp, sdO, sV, ty, tx);
#pragma unroll
  for (int i = 0; i < R; i++) {
    const int a = ty + kSide * i;
    const int q = q0 + a;
#pragma unroll
    for (int j = 0; j < R; j++) {
      const int k = k0 + tx + kSide * j;
      const bool valid = q < dims.T && k <= q;
      p[i][j] = valid ? expf(s[i][j] * dims.scale - sL[a]) : 0.0f;
      ds[i][j] = p[i][j] * (dp[i][j] - sD[a]);
    }
  }
}

// One (batch, head) of the backward's inputs: row t of q, k, v (3C apart), of dout (C apart) and of
// the row statistics lse and D.
template <typename T>
struct HeadRows {
  const T* q;
  const T* dout;
  const float* lse;
  const float* D;
  int C;
  size_t stride;  // 3C
  __device__ const T* k() const { return q + C; }
  __device__ const T* v() const { return q + 2 * size_t(C); }
};

template <typename T>
__device__ HeadRows<T> head_rows(const T* qkv, const T* dout, const float* lse, const float* D, const Dims& dims) {
  const int h = blockIdx.y, b = blockIdx.z;
  const size_t stride = 3 * size_t(dims.C), stats = (size_t(b) * dims.NH + h) * dims.T;
  return {qkv + size_t(b) * dims.T * stride + size_t(h) * dims.hs, dout + size_t(b) * dims.T * dims.C + size_t(h) * dims.hs,
          lse + stats, D + stats, dims.C, stride};
}

// The query side of a tile pair: q and dout rows [q0, q0 + kTile) and their lse and D.
template <int HS, int kTile, typename T>
__device__ void load_query_side(float* sQ, float* sdO, float* sL, float* sD, const HeadRows<T>& x, int q0,
                                const Dims& dims) {
  load_tile<HS, kTile>(sQ, x.q, q0, dims.T, x.stride, dims.hs);
  load_tile<HS, kTile>(sdO, x.dout, q0, dims.T, size_t(dims.C), dims.hs);
  load_rows<kTile>(sL, x.lse, q0, dims.T);
  load_rows<kTile>(sD, x.D, q0, dims.T);
}

// The key side: k and v rows [k0, k0 + kTile).
template <int HS, int kTile, typename T>
__device__ void load_key_side(float* sK, float* sV, const HeadRows<T>& x, int k0, const Dims& dims) {
  load_tile<HS, kTile>(sK, x.k(), k0, dims.T, x.stride, dims.hs);
  load_tile<HS, kTile>(sV, x.v(), k0, dims.T, x.stride, dims.hs);
}

// dst[(ty + 16i)·kLdP + tx + 16j] = v[i][j]: a thread's share of a [tile, tile] product into shared memory.
template <int R, int kLdP>
__device__ __forceinline__ void put_tile(float* dst, const float (&v)[R][R], int ty, int tx) {
#pragma unroll
  for (int i = 0; i < R; i++)
#pragma unroll
    for (int j = 0; j < R; j++) dst[(ty + kSide * i) * kLdP + tx + kSide * j] = v[i][j];
}

// grad[t, d] += acc[i][j] · scale for t = row0 + ty + 16i below T and d = tx + 16j below hs, rows
// `stride` apart: a thread's share of one head's gradient rows.
template <int R, int kCols, typename T>
__device__ void add_head_rows(T* grad, size_t stride, int row0, const float (&acc)[R][kCols], float scale,
                              const Dims& dims, int ty, int tx) {
#pragma unroll
  for (int i = 0; i < R; i++) {
    const int t = row0 + ty + kSide * i;
    if (t >= dims.T) continue;
    T* dst = grad + size_t(t) * stride;
#pragma unroll
    for (int j = 0; j < kCols; j++) {
      const int d = tx + kSide * j;
      if (d < dims.hs) dst[d] = from_float<T>(to_float(dst[d]) + acc[i][j] * scale);
    }
  }
}

// Where block (x, head h, batch b) adds its gradient: the head's q, k or v channels of dqkv.
template <typename T>
__device__ T* head_grad(T* dqkv, int part, const Dims& dims) {
  const size_t stride = 3 * size_t(dims.C);
  return dqkv + size_t(blockIdx.z) * dims.T * stride + size_t(part) * dims.C + size_t(blockIdx.y) * dims.hs;
}

// dk and dv of one key tile, summed over the query tiles from the diagonal to the end.
template <typename T, int HS, int R>
__global__ void __launch_bounds__(kThreads)
    attention_backward_kv_kernel(T* dqkv, const T* dout, const T* qkv, const float* lse, const float* D, Dims dims) {
  using G = Tiles<HS, R>;
  constexpr int kTile = G::kTile, kLd = G::kLd, kLdP = G::kLdP, kCols = G::kCols;
  float* smem = dynamic_shared_memory<float>();
  float* sK = smem;
  float* sV = sK + kTile * kLd;
  float* sQ = sV + kTile * kLd;
  float* sdO = sQ + kTile * kLd;
  float* sP = sdO + kTile * kLd;  // [kTile, kLdP], rows are queries
  float* sdS = sP + kTile * kLdP;
  float* sL = sdS + kTile * kLdP;
  float* sD = sL + kTile;

  const int kt = blockIdx.x;
  const int tx = threadIdx.x % kSide, ty = threadIdx.x / kSide;
  const int k0 = kt * kTile;
  const HeadRows<T> x = head_rows(qkv, dout, lse, D, dims);
  load_key_side<HS, kTile>(sK, sV, x, k0, dims);

  // Rows k = ty + 16i of the key tile, channels tx + 16j.
  float dk[R][kCols] = {}, dv[R][kCols] = {};
  const int query_tiles = (dims.T - 1) / kTile + 1;
  for (int qt = kt; qt < query_tiles; qt++) {
    const int q0 = qt * kTile;
    __syncthreads();
    load_query_side<HS, kTile>(sQ, sdO, sL, sD, x, q0, dims);
    __syncthreads();

    float p[R][R], ds[R][R];
    probabilities_and_dscores<HS, R>(p, ds, sQ, sdO, sK, sV, sL, sD, q0, k0, dims, ty, tx);
    put_tile<R, kLdP>(sP, p, ty, tx);
    put_tile<R, kLdP>(sdS, ds, ty, tx);
    __syncthreads();  // the sums below read columns written by other warps

    for (int a = 0; a < kTile; a++) {  // dv += pᵀ·dout, dk += dsᵀ·q over the tile's queries
      float pk[R], dsk[R];
#pragma unroll
      for (int i = 0; i < R; i++) {
        pk[i] = sP[a * kLdP + ty + kSide * i];
        dsk[i] = sdS[a * kLdP + ty + kSide * i];
      }
#pragma unroll
      for (int j = 0; j < kCols; j++) {
        const float g = sdO[a * kLd + tx + kSide * j];
        const float q = sQ[a * kLd + tx + kSide * j];
#pragma unroll
        for (int i = 0; i < R; i++) {
          dv[i][j] += pk[i] * g;
          dk[i][j] += dsk[i] * q;
        }
      }
    }
  }

  add_head_rows(head_grad(dqkv, 1, dims), x.stride, k0, dk, dims.scale, dims, ty, tx);
  add_head_rows(head_grad(dqkv, 2, dims), x.stride, k0, dv, 1.0f, dims, ty, tx);
}

// dq of one query tile, summed over the key tiles up to the diagonal.
template <typename T, int HS, int R>
__global__ void __launch_bounds__(kThreads)
    attention_backward_q_kernel(T* dqkv, const T* dout, const T* qkv, const float* lse, const float* D, Dims dims) {
  using G = Tiles<HS, R>;
  constexpr int kTile = G::kTile, kLd = G::kLd, kLdP = G::kLdP, kCols = G::kCols;
  float* smem = dynamic_shared_memory<float>();
  float* sQ = smem;
  float* sdO = sQ + kTile * kLd;
  float* sK = sdO + kTile * kLd;
  float* sV = sK + kTile * kLd;
  float* sdS = sV + kTile * kLd;  // [kTile, kLdP], rows are queries
  float* sL = sdS + kTile * kLdP;
  float* sD = sL + kTile;

  const int qt = gridDim.x - 1 - blockIdx.x;  // the longest rows first
  const int tx = threadIdx.x % kSide, ty = threadIdx.x / kSide;
  const int q0 = qt * kTile;
  const HeadRows<T> x = head_rows(qkv, dout, lse, D, dims);
  load_query_side<HS, kTile>(sQ, sdO, sL, sD, x, q0, dims);

  float dq[R][kCols] = {};
  const int q_end = min(dims.T, q0 + kTile);
  const int key_tiles = (q_end - 1) / kTile + 1;
  for (int kt = 0; kt < key_tiles; kt++) {
    const int k0 = kt * kTile;
    __syncthreads();
    load_key_side<HS, kTile>(sK, sV, x, k0, dims);
    __syncthreads();

    float p[R][R], ds[R][R];
    probabilities_and_dscores<HS, R>(p, ds, sQ, sdO, sK, sV, sL, sD, q0, k0, dims, ty, tx);
    put_tile<R, kLdP>(sdS, ds, ty, tx);
    __syncwarp();  // a row of sdS is written and read only by the 16 lanes of one warp

    tile_times_head<HS, R>(dq, sdS, sK, ty, tx);  // dq += ds·k
  }

  add_head_rows(head_grad(dqkv, 0, dims), x.stride, q0, dq, dims.scale, dims, ty, tx);
}

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
