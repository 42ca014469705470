#include "kernels/cuda/cuda_embedding.hpp"

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/token_sort.hpp"

namespace zt::cuda {

namespace {

constexpr int kBlock = 256;
constexpr int kRunBlock = 128;  // threads per run of equal tokens (8 channels each)

template <typename T, bool kVector>
__global__ void embedding_forward_kernel(T* out, const int32_t* tokens, const T* wte, const T* wpe,
                                         const TokenSegment* segments, int N, int T_, int C, int V) {
  const int groups = (C + kVec - 1) / kVec;
  const size_t idx = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= size_t(N) * groups) return;
  const int bt = int(idx / groups);
  const int c = int(idx % groups) * kVec;
  const int token = tokens[bt];
  float x[kVec];
  if (token >= 0 && token < V) {
    load_floats<kVector>(x, wte + size_t(token) * C, size_t(c), size_t(C));
    if (wpe) {  // learned positions (GPT-2); the llama family has none
      float p[kVec];
      const int position = bt % T_ - (segments ? segments[bt].begin : 0);
      load_floats<kVector>(p, wpe + size_t(position) * C, size_t(c), size_t(C));
#pragma unroll
      for (int k = 0; k < kVec; k++) x[k] += p[k];
    }
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

// Position p's gradient: the rows of dout at position p, in order (b, then the samples of a packed
// row, each long enough to reach p; one sample per row without segments).
template <typename T, bool kVector>
__global__ void dwpe_kernel(T* dwpe, const T* dout, const TokenSegment* segments, int B, int T_, int C) {
  const int groups = (C + kVec - 1) / kVec;
  const size_t idx = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= size_t(T_) * groups) return;
  const int p = int(idx / groups);
  const int c = int(idx % groups) * kVec;
  float acc[kVec];
  load_floats<kVector>(acc, dwpe + size_t(p) * C, size_t(c), size_t(C));
  for (int b = 0; b < B; b++) {
    const TokenSegment* row = segments ? segments + size_t(b) * T_ : nullptr;
    for (int begin = 0; begin < T_; begin = row ? row[begin].end : T_) {
      const int end = row ? row[begin].end : T_;
      if (begin + p >= end) continue;
      float g[kVec];
      load_floats<kVector>(g, dout + (size_t(b) * T_ + begin + p) * C, size_t(c), size_t(C));
#pragma unroll
      for (int k = 0; k < kVec; k++) acc[k] += g[k];
    }
  }
  store_floats<kVector>(dwpe + size_t(p) * C, acc, size_t(c), size_t(C));
}

constexpr size_t kAlign = 256;

size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

void check_shape(int B, int T, int C, int V, const char* op) {
  require(B >= 0 && T >= 0 && C > 0 && V > 0, op, ": bad shape B = ", B, ", T = ", T, ", C = ", C, ", V = ", V);
  require(size_t(B) * size_t(T) <= size_t(INT_MAX), op, ": B·T = ", size_t(B) * size_t(T), " tokens exceed 2^31 - 1");
}

// The workspace: sorted tokens, positions before and after the sort, CUB's own scratch.
struct Workspace {
  uint32_t* tokens_sorted;
  int32_t* positions;
  int32_t* positions_sorted;
  void* sort_temp;
  size_t sort_temp_bytes;
  size_t total;
};

Workspace layout(void* base, int N) {
  const size_t ints = align_up(size_t(N) * 4);
  Workspace w;
  auto* p = static_cast<char*>(base);
  w.tokens_sorted = reinterpret_cast<uint32_t*>(p);
  w.positions = reinterpret_cast<int32_t*>(p + ints);
  w.positions_sorted = reinterpret_cast<int32_t*>(p + 2 * ints);
  w.sort_temp = p + 3 * ints;
  w.sort_temp_bytes = sort_tokens_scratch_bytes(N);
  w.total = 3 * ints + align_up(w.sort_temp_bytes);
  return w;
}

}  // namespace

void embedding_forward(DType dt, void* out, const int32_t* tokens, const void* wte, const void* wpe, int B, int T,
                       int C, int V, cudaStream_t stream, const TokenSegment* segments) {
  check_shape(B, T, C, V, "embedding_forward");
  const int N = B * T;
  if (N == 0) return;
  const size_t threads = size_t(N) * ceil_div(size_t(C), kVec);
  const unsigned grid = grid_size(threads, kBlock, "embedding_forward");
  const bool vector = C % kVec == 0 && aligned16(out) && aligned16(wte) && aligned16(wpe);
  dispatch_activation(dt, "embedding_forward", [&](auto tag) {
    using E = decltype(tag);
    launch(vector ? embedding_forward_kernel<E, true> : embedding_forward_kernel<E, false>, grid, kBlock, 0, stream,
           "embedding_forward_kernel", static_cast<E*>(out), tokens, static_cast<const E*>(wte),
           static_cast<const E*>(wpe), segments, N, T, C, V);
  });
}

size_t embedding_backward_workspace_bytes(int B, int T) {
  check_shape(B, T, 1, 1, "embedding_backward_workspace_bytes");
  const int N = B * T;
  return 3 * align_up(size_t(N) * 4) + align_up(sort_tokens_scratch_bytes(N));
}

void embedding_backward(DType dt, void* dwte, void* dwpe, void* workspace, size_t workspace_bytes, const void* dout,
                        const int32_t* tokens, int B, int T, int C, int V, cudaStream_t stream,
                        const TokenSegment* segments) {
  check_shape(B, T, C, V, "embedding_backward");
  const int N = B * T;
  if (N == 0) return;
  dispatch_activation(dt, "embedding_backward", [&](auto tag) {
    using E = decltype(tag);
    auto* dy = static_cast<const E*>(dout);
    if (dwte) {
      require(workspace != nullptr && reinterpret_cast<uintptr_t>(workspace) % kAlign == 0,
              "embedding_backward: the workspace must be a device buffer aligned to ", kAlign, " bytes");
      const Workspace w = layout(workspace, N);
      require(workspace_bytes >= w.total, "embedding_backward: workspace of ", workspace_bytes, " bytes, need ",
              w.total, " (embedding_backward_workspace_bytes)");
      launch(iota_kernel, grid_size(size_t(N), kBlock, "embedding_backward"), kBlock, 0, stream, "iota_kernel",
             w.positions, N);
      sort_tokens(w.sort_temp, w.sort_temp_bytes, reinterpret_cast<const uint32_t*>(tokens), w.tokens_sorted,
                  w.positions, w.positions_sorted, N, stream);
      const bool vector = C % kVec == 0 && aligned16(dwte) && aligned16(dout);
      launch(vector ? dwte_kernel<E, true> : dwte_kernel<E, false>, unsigned(N), kRunBlock, 0, stream, "dwte_kernel",
             static_cast<E*>(dwte), dy, w.tokens_sorted, w.positions_sorted, N, C, V);
    }
    if (dwpe) {
      const size_t threads = size_t(T) * ceil_div(size_t(C), kVec);
      const bool vector = C % kVec == 0 && aligned16(dwpe) && aligned16(dout);
      launch(vector ? dwpe_kernel<E, true> : dwpe_kernel<E, false>, grid_size(threads, kBlock, "embedding_backward"),
             kBlock, 0, stream, "dwpe_kernel", static_cast<E*>(dwpe), dy, segments, B, T, C);
    }
  });
}

}  // namespace zt::cuda
