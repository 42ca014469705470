#include "kernels/cuda/cuda_attention.hpp"

#include <cmath>
#include <type_traits>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/mma.cuh"

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

// Shapes shared by the kernels, and where a head's rows lie: a qkv row holds NH query heads, then
// NKV key heads, then NKV value heads, hs channels each; query head h reads key and value head
// h / (NH / NKV) (grouped-query attention; NKV = NH is multi-head attention). out and dout rows
// hold the NH heads.
struct Dims {
  int T, NH, NKV, hs;
  float scale;      // 1/√hs
  bool accumulate;  // backward adds into dqkv (else writes over it)
  // The samples of packed rows ([B, T], null: every row one sample); a kernel points it at its own
  // batch row first (in_row).
  const TokenSegment* segments;
  int window;  // sliding-window attention: each query's last `window` keys; 0: all of them
  float softcap;  // > 0: scores soft-capped, softcap · tanh(s / softcap), before the mask
  // The score of a q·k product: scaled, then soft-capped.
  __host__ __device__ float score(float dot) const {
    const float s = dot * scale;
    return softcap > 0.0f ? softcap * tanhf(s / softcap) : s;
  }
  // d score / d (scale · q·k) at a score: 1 - tanh² with soft-capping, else 1.
  __host__ __device__ float slope(float score) const {
    const float t = softcap > 0.0f ? score / softcap : 0.0f;
    return 1.0f - t * t;
  }
  __host__ __device__ Dims in_row(int b) const {
    Dims d = *this;
    if (segments) d.segments = segments + size_t(b) * T;
    return d;
  }
  __host__ __device__ int group() const { return NH / NKV; }
  __host__ __device__ size_t qkv_row() const { return size_t(NH + 2 * NKV) * hs; }
  __host__ __device__ size_t out_row() const { return size_t(NH) * hs; }
  __host__ __device__ size_t q_at(int h) const { return size_t(h) * hs; }
  __host__ __device__ size_t k_at(int h) const { return size_t(NH + h / group()) * hs; }
  __host__ __device__ size_t v_at(int h) const { return size_t(NH + NKV + h / group()) * hs; }
  __host__ __device__ size_t stats(int b, int h) const { return (size_t(b) * NH + h) * T; }  // of lse and D

  // The keys query row q attends to, [key_begin(q), key_end(q)): causal inside q's sample, [begin,
  // q] ([0, q] for a row of one sample; rows past T, which no kernel writes, take the last row's
  // sample), the last `window` of them with a window (q - window, q]. Every kernel takes a row's
  // keys, the key tiles of a query tile and the query tiles of a key tile from here alone; a row's
  // range never starts or ends before the previous row's. Reads segments of one row (in_row).
  __host__ __device__ int key_begin(int q) const {
    const int sample = segments ? segments[q < T ? q : T - 1].begin : 0;
    return window > 0 && q - window + 1 > sample ? q - window + 1 : sample;
  }
  __host__ __device__ int key_end(int q) const { return q + 1 < T ? q + 1 : T; }
  // The same pairs from a key's side: the queries [k, query_end(k)) attend to key k (those of its
  // sample from k on, the first `window` of them with a window; none for a key past T).
  __host__ __device__ int query_end(int k) const {
    if (k >= T) return 0;
    const int sample = segments ? segments[k].end : T;
    return window > 0 && k + window < sample ? k + window : sample;
  }
  // A kernel asks once per row (or key) and tests each element against the bounds: no more per
  // element than a causal mask.
  struct Bounds {
    int begin, end;
    __host__ __device__ bool has(int x) const { return x >= begin && x < end; }
  };
  __host__ __device__ Bounds keys_of(int q) const { return {key_begin(q), key_end(q)}; }
  __host__ __device__ Bounds queries_of(int k) const { return {k, query_end(k)}; }
  // The key tiles [first, end) that the query rows [q0, q0 + tile) below T attend to.
  __host__ __device__ int first_key_tile(int q0, int tile) const { return key_begin(q0) / tile; }
  __host__ __device__ int key_tiles_end(int q0, int tile) const {
    const int last_row = (q0 + tile < T ? q0 + tile : T) - 1;
    return (key_end(last_row) - 1) / tile + 1;
  }
  // The query tiles [first, end) whose rows attend to the keys [k0, k0 + tile): causal, from the
  // diagonal's to the one where the last key's sample (or window) ends.
  __host__ __device__ int first_query_tile(int k0, int tile) const { return k0 / tile; }
  __host__ __device__ int query_tiles_end(int k0, int tile) const {
    const int last_key = (k0 + tile < T ? k0 + tile : T) - 1;
    return (query_end(last_key) - 1) / tile + 1;
  }
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

  const int T_ = dims.T, hs = dims.hs;
  const int qt = gridDim.x - 1 - blockIdx.x;  // the longest rows (most key tiles) start first
  const int h = blockIdx.y, b = blockIdx.z;
  dims = dims.in_row(b);
  const int tx = threadIdx.x % kSide, ty = threadIdx.x / kSide;
  const int q0 = qt * kTile;
  const size_t stride = dims.qkv_row();
  const T* rows = qkv + size_t(b) * T_ * stride;
  const T* q_src = rows + dims.q_at(h);
  const T* k_src = rows + dims.k_at(h);
  const T* v_src = rows + dims.v_at(h);
  load_tile<HS, kTile>(sQ, q_src, q0, T_, stride, hs);

  float m[R], l[R], o[R][kCols];
#pragma unroll
  for (int i = 0; i < R; i++) {
    m[i] = -INFINITY;
    l[i] = 0.0f;
#pragma unroll
    for (int j = 0; j < kCols; j++) o[i][j] = 0.0f;
  }

  const int key_tiles = dims.key_tiles_end(q0, kTile);
  for (int kt = dims.first_key_tile(q0, kTile); kt < key_tiles; kt++) {
    const int k0 = kt * kTile;
    __syncthreads();  // the previous tile's sK, sV, sP are no longer read
    load_tile<HS, kTile>(sK, k_src, k0, T_, stride, hs);
    load_tile<HS, kTile>(sV, v_src, k0, T_, stride, hs);
    __syncthreads();

    float s[R][R] = {};
    tile_dot<HS, R>(s, sQ, sK, ty, tx);
#pragma unroll
    for (int i = 0; i < R; i++) {
      const Dims::Bounds keys = dims.keys_of(q0 + ty + kSide * i);
      float tile_max = -INFINITY;
#pragma unroll
      for (int j = 0; j < R; j++) {
        const int k = k0 + tx + kSide * j;
        s[i][j] = keys.has(k) ? dims.score(s[i][j]) : -INFINITY;
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
    T* dst = out + (size_t(b) * T_ + q) * dims.out_row() + dims.q_at(h);
#pragma unroll
    for (int j = 0; j < kCols; j++) {
      const int d = tx + kSide * j;
      if (d < hs) dst[d] = from_float<T>(o[i][j] * inv);
    }
    if (tx == 0) lse[dims.stats(b, h) + q] = m[i] + logf(l[i]);
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
  const size_t offset = bt * dims.out_row() + dims.q_at(h);
  float s = 0.0f;
  for (int d = lane; d < dims.hs; d += kWarpSize) s += to_float(dout[offset + d]) * to_float(out[offset + d]);
  s = warp_sum(s);
  const size_t b = bt / dims.T, t = bt % dims.T;
  if (lane == 0) D[dims.stats(int(b), h) + t] = s;
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
    const Dims::Bounds keys = dims.keys_of(q);
#pragma unroll
    for (int j = 0; j < R; j++) {
      const int k = k0 + tx + kSide * j;
      const bool valid = q < dims.T && keys.has(k);
      const float score = dims.score(s[i][j]);
      p[i][j] = valid ? expf(score - sL[a]) : 0.0f;
      ds[i][j] = p[i][j] * (dp[i][j] - sD[a]) * dims.slope(score);
    }
  }
}

// One (batch, query head) of the backward's inputs: row t of its q, k and v (qkv_row apart), of
// dout (out_row apart) and of the row statistics lse and D.
template <typename T>
struct HeadRows {
  const T* q;
  const T* k;
  const T* v;
  const T* dout;
  const float* lse;
  const float* D;
  size_t stride, out_stride;
};

template <typename T>
__device__ HeadRows<T> head_rows(const T* qkv, const T* dout, const float* lse, const float* D, const Dims& dims, int b,
                                 int h) {
  const T* rows = qkv + size_t(b) * dims.T * dims.qkv_row();
  return {rows + dims.q_at(h),
          rows + dims.k_at(h),
          rows + dims.v_at(h),
          dout + size_t(b) * dims.T * dims.out_row() + dims.q_at(h),
          lse + dims.stats(b, h),
          D + dims.stats(b, h),
          dims.qkv_row(),
          dims.out_row()};
}

// The query side of a tile pair: q and dout rows [q0, q0 + kTile) and their lse and D.
template <int HS, int kTile, typename T>
__device__ void load_query_side(float* sQ, float* sdO, float* sL, float* sD, const HeadRows<T>& x, int q0,
                                const Dims& dims) {
  load_tile<HS, kTile>(sQ, x.q, q0, dims.T, x.stride, dims.hs);
  load_tile<HS, kTile>(sdO, x.dout, q0, dims.T, x.out_stride, dims.hs);
  load_rows<kTile>(sL, x.lse, q0, dims.T);
  load_rows<kTile>(sD, x.D, q0, dims.T);
}

// The key side: k and v rows [k0, k0 + kTile).
template <int HS, int kTile, typename T>
__device__ void load_key_side(float* sK, float* sV, const HeadRows<T>& x, int k0, const Dims& dims) {
  load_tile<HS, kTile>(sK, x.k, k0, dims.T, x.stride, dims.hs);
  load_tile<HS, kTile>(sV, x.v, k0, dims.T, x.stride, dims.hs);
}

// dst[(ty + 16i)·kLdP + tx + 16j] = v[i][j]: a thread's share of a [tile, tile] product into shared memory.
template <int R, int kLdP>
__device__ __forceinline__ void put_tile(float* dst, const float (&v)[R][R], int ty, int tx) {
#pragma unroll
  for (int i = 0; i < R; i++)
#pragma unroll
    for (int j = 0; j < R; j++) dst[(ty + kSide * i) * kLdP + tx + kSide * j] = v[i][j];
}

// grad[t, d] (+)= acc[i][j] · scale for t = row0 + ty + 16i below T and d = tx + 16j below hs, rows
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
      if (d < dims.hs) dst[d] = from_float<T>((dims.accumulate ? to_float(dst[d]) : 0.0f) + acc[i][j] * scale);
    }
  }
}

// Where a (batch, query head) adds its gradient: its q channels, or the k or v channels its kv head
// shares (part 0, 1, 2) of dqkv.
template <typename T>
__device__ T* head_grad(T* dqkv, int part, const Dims& dims, int b, int h) {
  const size_t at = part == 0 ? dims.q_at(h) : part == 1 ? dims.k_at(h) : dims.v_at(h);
  return dqkv + size_t(b) * dims.T * dims.qkv_row() + at;
}

// dk and dv of one key tile of kv head blockIdx.y, summed over the query tiles from the diagonal
// to the end of every query head that reads it (in head order).
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

  const int kt = blockIdx.x, h0 = blockIdx.y * dims.group(), b = blockIdx.z;
  dims = dims.in_row(b);
  const int tx = threadIdx.x % kSide, ty = threadIdx.x / kSide;
  const int k0 = kt * kTile;
  load_key_side<HS, kTile>(sK, sV, head_rows(qkv, dout, lse, D, dims, b, h0), k0, dims);

  // Rows k = ty + 16i of the key tile, channels tx + 16j.
  float dk[R][kCols] = {}, dv[R][kCols] = {};
  const int first = dims.first_query_tile(k0, kTile);
  const int tiles = dims.query_tiles_end(k0, kTile) - first;  // per query head
  for (int pass = 0; pass < dims.group() * tiles; pass++) {
    const int h = h0 + pass / tiles, q0 = (first + pass % tiles) * kTile;
    __syncthreads();
    load_query_side<HS, kTile>(sQ, sdO, sL, sD, head_rows(qkv, dout, lse, D, dims, b, h), q0, dims);
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

  add_head_rows(head_grad(dqkv, 1, dims, b, h0), dims.qkv_row(), k0, dk, dims.scale, dims, ty, tx);
  add_head_rows(head_grad(dqkv, 2, dims, b, h0), dims.qkv_row(), k0, dv, 1.0f, dims, ty, tx);
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
  const int h = blockIdx.y, b = blockIdx.z;
  dims = dims.in_row(b);
  const int tx = threadIdx.x % kSide, ty = threadIdx.x / kSide;
  const int q0 = qt * kTile;
  const HeadRows<T> x = head_rows(qkv, dout, lse, D, dims, b, h);
  load_query_side<HS, kTile>(sQ, sdO, sL, sD, x, q0, dims);

  float dq[R][kCols] = {};
  const int key_tiles = dims.key_tiles_end(q0, kTile);
  for (int kt = dims.first_key_tile(q0, kTile); kt < key_tiles; kt++) {
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

  add_head_rows(head_grad(dqkv, 0, dims, b, h), x.stride, q0, dq, dims.scale, dims, ty, tx);
}

// ---------------------------------------------------------------------------------------------
// bf16 on the tensor cores (FlashAttention-2's structure, mma.cuh's m16n8k16 products): 4 warps,
// 64-row query and key tiles in shared memory as bf16, each warp owning 16 rows of the block's tile.
// Scores, probabilities and their gradients stay in the accumulators' registers: a thread holds
// rows g and g + 8 of its warp's 16 (g = lane / 4) and, of every 8-column tile, columns 2t and
// 2t + 1 (t = lane % 4), so a row's max and sum are two shuffles across the 4 lanes of a group,
// and an accumulator tile is the A operand of the next product as it stands. Probabilities and
// their gradients are rounded to bf16 for the products that consume them, as in FlashAttention-2.

constexpr int kMmaWarps = 4;
constexpr int kMmaThreads = kMmaWarps * kWarpSize;
constexpr int kMmaTile = 16 * kMmaWarps;  // rows of a query or key tile
constexpr int kKeyTiles8 = kMmaTile / 8;  // 8-column tiles of a [16, kMmaTile] score block

template <int HS>
struct MmaTiles {
  static_assert(HS % 16 == 0, "head tiles are 16 channels deep");
  static constexpr int kLd = HS + 8;       // bf16 per shared row: 16 bytes of padding against bank conflicts
  static constexpr int kSteps = HS / 16;   // k-steps over the head channels
  static constexpr int kCols8 = HS / 8;    // 8-column tiles of a [16, HS] output
  static constexpr size_t tile_bytes() { return size_t(kMmaTile) * kLd * sizeof(bf16); }
  static constexpr size_t stats_bytes() { return 2 * size_t(kMmaTile) * sizeof(float); }
};

// dst[r, d] = src[(row0 + r)·stride + d] for r < kMmaTile, d < HS: 0 past T and past hs, 16-byte
// loads where a whole 8-channel group is in range and aligned.
template <int HS>
__device__ void load_bf16_tile(bf16* dst, const bf16* src, int row0, int T_, size_t stride, int hs) {
  constexpr int kLd = MmaTiles<HS>::kLd, kGroups = HS / kVec;
  const bool aligned = hs % kVec == 0 && stride % kVec == 0 && (reinterpret_cast<uintptr_t>(src) & 15u) == 0;
  for (int e = threadIdx.x; e < kMmaTile * kGroups; e += blockDim.x) {
    const int r = e / kGroups, d = (e % kGroups) * kVec, t = row0 + r;
    Vec8<bf16> v;
    if (aligned && t < T_ && d + kVec <= hs) {
      v = load8(src + size_t(t) * stride + d);
    } else {
#pragma unroll
      for (int k = 0; k < kVec; k++)
        v.v[k] = t < T_ && d + k < hs ? src[size_t(t) * stride + d + k] : __float2bfloat16_rn(0.0f);
    }
    store8(dst + r * kLd + d, v);
  }
}

// The A fragments of rows [16w, 16w + 16) of a [kMmaTile, HS] shared tile, for every k-step.
template <int HS>
__device__ __forceinline__ void a_fragments(uint32_t (&a)[MmaTiles<HS>::kSteps][4], const bf16* tile, int warp,
                                            int lane) {
  constexpr int kLd = MmaTiles<HS>::kLd;
  const bf16* base = tile + (16 * warp + lane / 4) * kLd + (lane % 4) * 2;
#pragma unroll
  for (int ks = 0; ks < MmaTiles<HS>::kSteps; ks++) {
    a[ks][0] = load_pair(base + ks * 16);
    a[ks][1] = load_pair(base + 8 * kLd + ks * 16);
    a[ks][2] = load_pair(base + ks * 16 + 8);
    a[ks][3] = load_pair(base + 8 * kLd + ks * 16 + 8);
  }
}

// acc[j] += A · rows[8j .. 8j + 8)ᵀ over the head: a [16, kMmaTile] block of dot products between
// the warp's 16 rows (A fragments) and the rows of a shared [kMmaTile, HS] tile.
template <int HS>
__device__ __forceinline__ void dot_rows(float (&acc)[kKeyTiles8][4], const uint32_t (&a)[MmaTiles<HS>::kSteps][4],
                                         const bf16* tile, int lane) {
  constexpr int kLd = MmaTiles<HS>::kLd;
#pragma unroll
  for (int j = 0; j < kKeyTiles8; j++) {
    const bf16* row = tile + (8 * j + lane / 4) * kLd + (lane % 4) * 2;
#pragma unroll
    for (int ks = 0; ks < MmaTiles<HS>::kSteps; ks++) {
      const uint32_t b[2] = {load_pair(row + ks * 16), load_pair(row + ks * 16 + 8)};
      mma_bf16_16816(acc[j], a[ks], b);
    }
  }
}

// out[n] += P · tile, P a [16, kMmaTile] block in accumulator registers (rounded to bf16 here),
// tile a shared [kMmaTile, HS] matrix whose rows P's columns index.
template <int HS>
__device__ __forceinline__ void times_tile(float (&out)[MmaTiles<HS>::kCols8][4], const float (&p)[kKeyTiles8][4],
                                           const bf16* tile, int lane) {
  constexpr int kLd = MmaTiles<HS>::kLd;
#pragma unroll
  for (int kk = 0; kk < kMmaTile / 16; kk++) {
    const uint32_t a[4] = {pack_bf16(p[2 * kk][0], p[2 * kk][1]), pack_bf16(p[2 * kk][2], p[2 * kk][3]),
                           pack_bf16(p[2 * kk + 1][0], p[2 * kk + 1][1]),
                           pack_bf16(p[2 * kk + 1][2], p[2 * kk + 1][3])};
    const bf16* col = tile + (16 * kk + (lane % 4) * 2) * kLd + lane / 4;
#pragma unroll
    for (int n = 0; n < MmaTiles<HS>::kCols8; n++) {
      const uint32_t b[2] = {load_pair(col + 8 * n, col + kLd + 8 * n),
                             load_pair(col + 8 * kLd + 8 * n, col + 9 * kLd + 8 * n)};
      mma_bf16_16816(out[n], a, b);
    }
  }
}

// Max and sum over the 4 lanes that hold one row of an accumulator.
__device__ __forceinline__ float quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(kFullMask, v, 1));
  return fmaxf(v, __shfl_xor_sync(kFullMask, v, 2));
}
__device__ __forceinline__ float quad_sum(float v) {
  v += __shfl_xor_sync(kFullMask, v, 1);
  return v + __shfl_xor_sync(kFullMask, v, 2);
}

// Element (i, e) of an 8-column accumulator tile j: its row (0: g, 1: g + 8) and column.
__device__ __forceinline__ int acc_row(int lane, int e) { return lane / 4 + (e >= 2 ? 8 : 0); }
__device__ __forceinline__ int acc_col(int lane, int j, int e) { return 8 * j + (lane % 4) * 2 + (e % 2); }

// grad[t, d] (+)= acc · scale for the warp's rows t = row0 + 16w + r below T and channels d below
// hs, rows `stride` apart.
template <int HS>
__device__ void write_head_rows(bf16* grad, size_t stride, int row0, const float (&acc)[MmaTiles<HS>::kCols8][4],
                                float scale, const Dims& dims, int warp, int lane) {
#pragma unroll
  for (int n = 0; n < MmaTiles<HS>::kCols8; n++)
#pragma unroll
    for (int e = 0; e < 4; e++) {
      const int t = row0 + 16 * warp + acc_row(lane, e), d = acc_col(lane, n, e);
      if (t >= dims.T || d >= dims.hs) continue;
      bf16& dst = grad[size_t(t) * stride + d];
      dst = __float2bfloat16_rn((dims.accumulate ? __bfloat162float(dst) : 0.0f) + acc[n][e] * scale);
    }
}

template <int HS>
__global__ void __launch_bounds__(kMmaThreads) attention_forward_mma_kernel(bf16* out, float* lse, const bf16* qkv,
                                                                            Dims dims) {
  using G = MmaTiles<HS>;
  bf16* sQ = dynamic_shared_memory<bf16>();
  bf16* sK = sQ + kMmaTile * G::kLd;
  bf16* sV = sK + kMmaTile * G::kLd;
  const int qt = gridDim.x - 1 - blockIdx.x;  // the longest rows (most key tiles) start first
  const int h = blockIdx.y, b = blockIdx.z;
  dims = dims.in_row(b);
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int q0 = qt * kMmaTile;
  const size_t stride = dims.qkv_row();
  const bf16* rows = qkv + size_t(b) * dims.T * stride;
  load_bf16_tile<HS>(sQ, rows + dims.q_at(h), q0, dims.T, stride, dims.hs);
  __syncthreads();
  uint32_t qa[G::kSteps][4];
  a_fragments<HS>(qa, sQ, warp, lane);

  float o[G::kCols8][4] = {}, m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  const int row[2] = {q0 + 16 * warp + lane / 4, q0 + 16 * warp + lane / 4 + 8};
  const Dims::Bounds keys[2] = {dims.keys_of(row[0]), dims.keys_of(row[1])};
  const int key_tiles = dims.key_tiles_end(q0, kMmaTile);
  for (int kt = dims.first_key_tile(q0, kMmaTile); kt < key_tiles; kt++) {
    const int k0 = kt * kMmaTile;
    __syncthreads();  // every warp is done with the previous key tile
    load_bf16_tile<HS>(sK, rows + dims.k_at(h), k0, dims.T, stride, dims.hs);
    load_bf16_tile<HS>(sV, rows + dims.v_at(h), k0, dims.T, stride, dims.hs);
    __syncthreads();

    float s[kKeyTiles8][4] = {};
    dot_rows<HS>(s, qa, sK, lane);
    float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int j = 0; j < kKeyTiles8; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        const int key = k0 + acc_col(lane, j, e), r = e / 2;
        s[j][e] = keys[r].has(key) ? dims.score(s[j][e]) : -INFINITY;
        tile_max[r] = fmaxf(tile_max[r], s[j][e]);
      }
    float alpha[2], row_sum[2] = {0.0f, 0.0f};
#pragma unroll
    for (int r = 0; r < 2; r++) {
      // -inf while a row has seen only masked scores (the tile's first rows belong to an earlier
      // sample than this row's): it keeps its zeros.
      const float m_new = fmaxf(m[r], quad_max(tile_max[r]));
      alpha[r] = m_new == -INFINITY ? 1.0f : expf(m[r] - m_new);
      m[r] = m_new;
    }
#pragma unroll
    for (int j = 0; j < kKeyTiles8; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        s[j][e] = s[j][e] == -INFINITY ? 0.0f : expf(s[j][e] - m[e / 2]);
        row_sum[e / 2] += s[j][e];
      }
#pragma unroll
    for (int r = 0; r < 2; r++) l[r] = l[r] * alpha[r] + quad_sum(row_sum[r]);
#pragma unroll
    for (int n = 0; n < G::kCols8; n++)
#pragma unroll
      for (int e = 0; e < 4; e++) o[n][e] *= alpha[e / 2];
    times_tile<HS>(o, s, sV, lane);
  }

  const float inv[2] = {1.0f / l[0], 1.0f / l[1]};
#pragma unroll
  for (int n = 0; n < G::kCols8; n++)
#pragma unroll
    for (int e = 0; e < 4; e++) {
      const int t = row[e / 2], d = acc_col(lane, n, e);
      if (t < dims.T && d < dims.hs)
        out[(size_t(b) * dims.T + t) * dims.out_row() + dims.q_at(h) + d] = __float2bfloat16_rn(o[n][e] * inv[e / 2]);
    }
  if (lane % 4 == 0)
    for (int r = 0; r < 2; r++)
      if (row[r] < dims.T) lse[dims.stats(b, h) + row[r]] = m[r] + logf(l[r]);
}

// The lse and D of rows [row0, row0 + kMmaTile) of one (batch, head), 0 past T.
__device__ void load_stats(float* sL, float* sD, const float* lse, const float* D, int row0, int T_) {
  for (int r = threadIdx.x; r < kMmaTile; r += blockDim.x) {
    sL[r] = row0 + r < T_ ? lse[row0 + r] : 0.0f;
    sD[r] = row0 + r < T_ ? D[row0 + r] : 0.0f;
  }
}

// dq of one query tile (its own query head), summed over the key tiles up to the diagonal:
// p = exp(q·kᵀ·scale - lse), ds = p·(dout·vᵀ - D), dq = Σ ds·k · scale.
template <int HS>
__global__ void __launch_bounds__(kMmaThreads)
    attention_backward_q_mma_kernel(bf16* dqkv, const bf16* dout, const bf16* qkv, const float* lse, const float* D,
                                    Dims dims) {
  using G = MmaTiles<HS>;
  bf16* sQ = dynamic_shared_memory<bf16>();
  bf16* sdO = sQ + kMmaTile * G::kLd;
  bf16* sK = sdO + kMmaTile * G::kLd;
  bf16* sV = sK + kMmaTile * G::kLd;
  float* sL = reinterpret_cast<float*>(sV + kMmaTile * G::kLd);
  float* sD = sL + kMmaTile;
  const int qt = gridDim.x - 1 - blockIdx.x;
  const int h = blockIdx.y, b = blockIdx.z;
  dims = dims.in_row(b);
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int q0 = qt * kMmaTile;
  const size_t stride = dims.qkv_row();
  const bf16* rows = qkv + size_t(b) * dims.T * stride;
  load_bf16_tile<HS>(sQ, rows + dims.q_at(h), q0, dims.T, stride, dims.hs);
  load_bf16_tile<HS>(sdO, dout + size_t(b) * dims.T * dims.out_row() + dims.q_at(h), q0, dims.T, dims.out_row(),
                     dims.hs);
  load_stats(sL, sD, lse + dims.stats(b, h), D + dims.stats(b, h), q0, dims.T);
  __syncthreads();
  uint32_t qa[G::kSteps][4], da[G::kSteps][4];
  a_fragments<HS>(qa, sQ, warp, lane);
  a_fragments<HS>(da, sdO, warp, lane);
  const int local[2] = {16 * warp + lane / 4, 16 * warp + lane / 4 + 8};
  const float L[2] = {sL[local[0]], sL[local[1]]}, Dr[2] = {sD[local[0]], sD[local[1]]};
  const Dims::Bounds keys[2] = {dims.keys_of(q0 + local[0]), dims.keys_of(q0 + local[1])};

  float dq[G::kCols8][4] = {};
  const int key_tiles = dims.key_tiles_end(q0, kMmaTile);
  for (int kt = dims.first_key_tile(q0, kMmaTile); kt < key_tiles; kt++) {
    const int k0 = kt * kMmaTile;
    __syncthreads();
    load_bf16_tile<HS>(sK, rows + dims.k_at(h), k0, dims.T, stride, dims.hs);
    load_bf16_tile<HS>(sV, rows + dims.v_at(h), k0, dims.T, stride, dims.hs);
    __syncthreads();
    float s[kKeyTiles8][4] = {}, dp[kKeyTiles8][4] = {};
    dot_rows<HS>(s, qa, sK, lane);
    dot_rows<HS>(dp, da, sV, lane);
#pragma unroll
    for (int j = 0; j < kKeyTiles8; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        const int key = k0 + acc_col(lane, j, e), r = e / 2, q = q0 + local[r];
        const float score = dims.score(s[j][e]);
        const float p = q < dims.T && keys[r].has(key) ? expf(score - L[r]) : 0.0f;
        s[j][e] = p * (dp[j][e] - Dr[r]) * dims.slope(score);  // ds
      }
    times_tile<HS>(dq, s, sK, lane);
  }
  write_head_rows<HS>(dqkv + size_t(b) * dims.T * stride + dims.q_at(h), stride, q0, dq, dims.scale,
                                   dims, warp, lane);
}

// dk and dv of one key tile of kv head blockIdx.y, summed over the query tiles from the diagonal
// to the end of every query head that reads it (in head order): with pᵀ = exp(k·qᵀ·scale - lse)
// and dsᵀ = pᵀ·(v·doutᵀ - D), dv = Σ pᵀ·dout and dk = Σ dsᵀ·q · scale.
template <int HS>
__global__ void __launch_bounds__(kMmaThreads)
    attention_backward_kv_mma_kernel(bf16* dqkv, const bf16* dout, const bf16* qkv, const float* lse, const float* D,
                                     Dims dims) {
  using G = MmaTiles<HS>;
  bf16* sK = dynamic_shared_memory<bf16>();
  bf16* sV = sK + kMmaTile * G::kLd;
  bf16* sQ = sV + kMmaTile * G::kLd;
  bf16* sdO = sQ + kMmaTile * G::kLd;
  float* sL = reinterpret_cast<float*>(sdO + kMmaTile * G::kLd);
  float* sD = sL + kMmaTile;
  const int kt = blockIdx.x, h0 = blockIdx.y * dims.group(), b = blockIdx.z;
  dims = dims.in_row(b);
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int k0 = kt * kMmaTile;
  const size_t stride = dims.qkv_row();
  const bf16* rows = qkv + size_t(b) * dims.T * stride;
  load_bf16_tile<HS>(sK, rows + dims.k_at(h0), k0, dims.T, stride, dims.hs);
  load_bf16_tile<HS>(sV, rows + dims.v_at(h0), k0, dims.T, stride, dims.hs);
  __syncthreads();
  uint32_t ka[G::kSteps][4], va[G::kSteps][4];
  a_fragments<HS>(ka, sK, warp, lane);
  a_fragments<HS>(va, sV, warp, lane);
  const int key[2] = {k0 + 16 * warp + lane / 4, k0 + 16 * warp + lane / 4 + 8};
  const Dims::Bounds queries[2] = {dims.queries_of(key[0]), dims.queries_of(key[1])};

  float dk[G::kCols8][4] = {}, dv[G::kCols8][4] = {};
  const int first = dims.first_query_tile(k0, kMmaTile);
  const int tiles = dims.query_tiles_end(k0, kMmaTile) - first;  // per query head
  for (int pass = 0; pass < dims.group() * tiles; pass++) {
    const int h = h0 + pass / tiles, q0 = (first + pass % tiles) * kMmaTile;
    __syncthreads();
    load_bf16_tile<HS>(sQ, rows + dims.q_at(h), q0, dims.T, stride, dims.hs);
    load_bf16_tile<HS>(sdO, dout + size_t(b) * dims.T * dims.out_row() + dims.q_at(h), q0, dims.T, dims.out_row(),
                       dims.hs);
    load_stats(sL, sD, lse + dims.stats(b, h), D + dims.stats(b, h), q0, dims.T);
    __syncthreads();
    float st[kKeyTiles8][4] = {}, dpt[kKeyTiles8][4] = {};
    dot_rows<HS>(st, ka, sQ, lane);
    dot_rows<HS>(dpt, va, sdO, lane);
#pragma unroll
    for (int j = 0; j < kKeyTiles8; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        const int c = acc_col(lane, j, e), q = q0 + c;
        const bool valid = queries[e / 2].has(q);
        const float score = dims.score(st[j][e]);
        st[j][e] = valid ? expf(score - sL[c]) : 0.0f;                       // pᵀ
        dpt[j][e] = st[j][e] * (dpt[j][e] - sD[c]) * dims.slope(score);      // dsᵀ
      }
    times_tile<HS>(dv, st, sdO, lane);
    times_tile<HS>(dk, dpt, sQ, lane);
  }
  bf16* grad = dqkv + size_t(b) * dims.T * stride;
  write_head_rows<HS>(grad + dims.k_at(h0), stride, k0, dk, dims.scale, dims, warp, lane);
  write_head_rows<HS>(grad + dims.v_at(h0), stride, k0, dv, 1.0f, dims, warp, lane);
}

void check_shape(const AttentionShape& s, const char* op) {
  require(s.B >= 0 && s.T >= 0 && s.NH > 0 && s.NKV > 0 && s.hs > 0, op, ": bad shape B = ", s.B, ", T = ", s.T,
          ", NH = ", s.NH, ", NKV = ", s.NKV, ", head size ", s.hs);
  require(s.NH % s.NKV == 0, op, ": NH = ", s.NH, " query heads do not share NKV = ", s.NKV, " key/value heads evenly");
  require(s.window >= 0, op, ": window ", s.window, " is negative (0: none)");
  require(s.hs <= kAttentionMaxHeadSize, op, ": head size ", s.hs, " exceeds ", kAttentionMaxHeadSize);
  require(s.NH <= 65535 && s.B <= 65535, op, ": NH = ", s.NH, " and B = ", s.B,
          " must be at most 65535 (grid y and z)");
  require(size_t(s.B) * s.T * size_t(s.NH + 2 * s.NKV) * s.hs < (size_t(1) << 62), op, ": qkv too large");
}

AttentionShape multi_head(int B, int T, int C, int NH, const TokenSegment* segments, const char* op) {
  require(B >= 0 && T >= 0 && C > 0 && NH > 0, op, ": bad shape B = ", B, ", T = ", T, ", C = ", C, ", NH = ", NH);
  require(C % NH == 0, op, ": C = ", C, " is not a multiple of NH = ", NH);
  return {B, T, NH, NH, C / NH, segments, 0};
}

Dims dims_of(const AttentionShape& s, GradInto into = GradInto::Accumulate) {
  const float scale = s.scores.scale > 0.0f ? s.scores.scale : 1.0f / std::sqrt(float(s.hs));
  return {s.T, s.NH, s.NKV, s.hs, scale, into == GradInto::Accumulate, s.segments, s.window, s.scores.softcap};
}

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

// Calls f(HS, R) (integral constants) for the smallest compiled head size of the CUDA-core kernels
// that holds hs, with its rows per thread.
template <typename F>
void dispatch_head_size(int hs, F&& f) {
  if (hs <= 32)
    f(std::integral_constant<int, 32>{}, std::integral_constant<int, 4>{});
  else if (hs <= 64)
    f(std::integral_constant<int, 64>{}, std::integral_constant<int, 4>{});
  else
    f(std::integral_constant<int, 128>{}, std::integral_constant<int, 2>{});
}

// Calls f(HS) for the smallest compiled head size of the tensor-core kernels that holds hs.
template <typename F>
void dispatch_mma_head_size(int hs, F&& f) {
  if (hs <= 16)
    f(std::integral_constant<int, 16>{});
  else if (hs <= 32)
    f(std::integral_constant<int, 32>{});
  else if (hs <= 64)
    f(std::integral_constant<int, 64>{});
  else
    f(std::integral_constant<int, 128>{});
}

// The grid of one block per (tile, head, batch).
dim3 tile_grid(int T, int tile, int heads, int B) {
  return dim3(unsigned(ceil_div(size_t(T), size_t(tile))), unsigned(heads), unsigned(B));
}

}  // namespace

void attention_forward(DType dt, void* out, float* lse, const void* qkv, const AttentionShape& s, cudaStream_t stream) {
  check_shape(s, "attention_forward");
  if (s.B == 0 || s.T == 0) return;
  const Dims dims = dims_of(s);
  dispatch_activation(dt, "attention_forward", [&](auto tag) {
    using E = decltype(tag);
    if constexpr (std::is_same_v<E, bf16>) {
      dispatch_mma_head_size(s.hs, [&](auto hs_c) {
        constexpr int HS = decltype(hs_c)::value;
        const size_t bytes = 3 * MmaTiles<HS>::tile_bytes();
        auto kernel = attention_forward_mma_kernel<HS>;
        allow_shared_memory(kernel, bytes, "attention_forward");
        launch(kernel, tile_grid(s.T, kMmaTile, s.NH, s.B), kMmaThreads, bytes, stream, "attention_forward_mma_kernel",
               static_cast<bf16*>(out), lse, static_cast<const bf16*>(qkv), dims);
      });
    } else {
      dispatch_head_size(s.hs, [&](auto hs_c, auto r_c) {
        constexpr int HS = decltype(hs_c)::value, R = decltype(r_c)::value;
        using G = Tiles<HS, R>;
        const size_t bytes = G::forward_floats() * sizeof(float);
        auto kernel = attention_forward_kernel<E, HS, R>;
        allow_shared_memory(kernel, bytes, "attention_forward");
        launch(kernel, tile_grid(s.T, G::kTile, s.NH, s.B), kThreads, bytes, stream, "attention_forward_kernel",
               static_cast<E*>(out), lse, static_cast<const E*>(qkv), dims);
      });
    }
  });
}

void attention_forward(DType dt, void* out, float* lse, const void* qkv, int B, int T, int C, int NH,
                       cudaStream_t stream, const TokenSegment* segments) {
  attention_forward(dt, out, lse, qkv, multi_head(B, T, C, NH, segments, "attention_forward"), stream);
}

size_t attention_backward_scratch_floats(int B, int T, int NH) {
  require(B >= 0 && T >= 0 && NH > 0, "attention_backward_scratch_floats: bad shape B = ", B, ", T = ", T,
          ", NH = ", NH);
  return size_t(B) * NH * T;
}

void attention_backward(DType dt, void* dqkv, float* scratch, const void* dout, const void* qkv, const void* out,
                        const float* lse, const AttentionShape& s, cudaStream_t stream, GradInto dqkv_into) {
  check_shape(s, "attention_backward");
  if (s.B == 0 || s.T == 0) return;
  require(scratch != nullptr, "attention_backward: scratch is null (attention_backward_scratch_floats floats)");
  const Dims dims = dims_of(s, dqkv_into);
  dispatch_activation(dt, "attention_backward", [&](auto tag) {
    using E = decltype(tag);
    auto* dx = static_cast<E*>(dqkv);
    auto* dy = static_cast<const E*>(dout);
    auto* x = static_cast<const E*>(qkv);
    const size_t rows = size_t(s.B) * s.T * s.NH;
    launch(attention_backward_dot_kernel<E>, grid_size(rows, kDotWarpsPerBlock, "attention_backward"),
           kDotWarpsPerBlock * kWarpSize, 0, stream, "attention_backward_dot_kernel", scratch, dy,
           static_cast<const E*>(out), s.B, dims);
    if constexpr (std::is_same_v<E, bf16>) {
      dispatch_mma_head_size(s.hs, [&](auto hs_c) {
        constexpr int HS = decltype(hs_c)::value;
        const size_t bytes = 4 * MmaTiles<HS>::tile_bytes() + MmaTiles<HS>::stats_bytes();
        auto kv_kernel = attention_backward_kv_mma_kernel<HS>;
        allow_shared_memory(kv_kernel, bytes, "attention_backward");
        launch(kv_kernel, tile_grid(s.T, kMmaTile, s.NKV, s.B), kMmaThreads, bytes, stream,
               "attention_backward_kv_mma_kernel", dx, dy, x, lse, scratch, dims);
        auto q_kernel = attention_backward_q_mma_kernel<HS>;
        allow_shared_memory(q_kernel, bytes, "attention_backward");
        launch(q_kernel, tile_grid(s.T, kMmaTile, s.NH, s.B), kMmaThreads, bytes, stream,
               "attention_backward_q_mma_kernel", dx, dy, x, lse, scratch, dims);
      });
    } else {
      dispatch_head_size(s.hs, [&](auto hs_c, auto r_c) {
        constexpr int HS = decltype(hs_c)::value, R = decltype(r_c)::value;
        using G = Tiles<HS, R>;
        const size_t kv_bytes = G::kv_floats() * sizeof(float);
        auto kv_kernel = attention_backward_kv_kernel<E, HS, R>;
        allow_shared_memory(kv_kernel, kv_bytes, "attention_backward");
        launch(kv_kernel, tile_grid(s.T, G::kTile, s.NKV, s.B), kThreads, kv_bytes, stream,
               "attention_backward_kv_kernel", dx, dy, x, lse, scratch, dims);
        const size_t q_bytes = G::q_floats() * sizeof(float);
        auto q_kernel = attention_backward_q_kernel<E, HS, R>;
        allow_shared_memory(q_kernel, q_bytes, "attention_backward");
        launch(q_kernel, tile_grid(s.T, G::kTile, s.NH, s.B), kThreads, q_bytes, stream,
               "attention_backward_q_kernel", dx, dy, x, lse, scratch, dims);
      });
    }
  });
}

void attention_backward(DType dt, void* dqkv, float* scratch, const void* dout, const void* qkv, const void* out,
                        const float* lse, int B, int T, int C, int NH, cudaStream_t stream, GradInto dqkv_into,
                        const TokenSegment* segments) {
  attention_backward(dt, dqkv, scratch, dout, qkv, out, lse, multi_head(B, T, C, NH, segments, "attention_backward"),
                     stream, dqkv_into);
}

}  // namespace zt::cuda
