#include "kernels/cuda/cuda_matmul.hpp"

#include <cublasLt.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>

#include "kernels/cuda/column_sums.cuh"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_gelu.hpp"

namespace zt::cuda {

// The matmul's own kernels: the bias added when cuBLASLt's bias epilogue cannot take it, and the
// term of the bias gradient's column sums.
namespace {

constexpr int kBiasBlock = 256;

// out[n, o] += bias[o] over a row-major [N, OC] matrix (when the bias epilogue is unavailable).
template <typename T>
__global__ void add_bias_kernel(T* out, const T* bias, int N, int OC) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= size_t(N) * OC) return;
  out[i] = from_float<T>(to_float(out[i]) + to_float(bias[i % OC]));
}

// acc[0] += dout[r, c]: the bias gradient as a column sum.
template <typename T>
struct DoutTerm {
  const T* dout;
  int OC;
  __device__ void operator()(int r, int c, float (&acc)[1]) const { acc[0] += to_float(dout[size_t(r) * OC + c]); }
};
// Throws zt::Error "<where>: <call> failed: <status name>: <description>".
[[noreturn]] void cublas_call_failed(cublasStatus_t status, const char* call, const char* where) {
  throw_error(std::string(where) + ": " + call + " failed: " + cublasLtGetStatusName(status) + ": " +
              cublasLtGetStatusString(status));
}
}  // namespace

#define ZT_CUBLAS_CHECK(call)                                                           \
  do {                                                                                  \
    const cublasStatus_t zt_status_ = (call);                                           \
    if (zt_status_ != CUBLAS_STATUS_SUCCESS) cublas_call_failed(zt_status_, #call, __func__); \
  } while (0)

namespace {

// One column-major GEMM, D[m, n] = op(A)[m, k] · op(B)[k, n] + beta · D, with an epilogue.
struct Gemm {
  bool trans_a = false, trans_b = false;
  int m = 0, n = 0, k = 0;
  const void* A = nullptr;
  int lda = 0;
  const void* B = nullptr;
  int ldb = 0;
  void* D = nullptr;
  int ldd = 0;
  float beta = 0.0f;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;  // length m (the rows of D)
  void* aux = nullptr;         // GELU input, m x n with leading dimension ldd
};

}  // namespace

// What cuBLASLt's objects for a GEMM depend on: everything but its pointers, whose alignments (as
// the heuristic was told them) are part of it.
using GemmKey = std::array<int64_t, 15>;

// The cuBLASLt descriptors, layouts and chosen algorithm of one GemmKey, made by its first call and
// kept: creating them and running the heuristic costs host time on every call otherwise.
struct GemmPlan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  cublasLtMatmulHeuristicResult_t heuristic{};
  bool found = false;  // false: cuBLASLt has no algorithm for it
  GemmPlan() = default;
  GemmPlan(const GemmPlan&) = delete;
  GemmPlan& operator=(const GemmPlan&) = delete;
  ~GemmPlan() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

struct MatmulContext::Impl {
  int device = -1;
  bool fused_epilogues = true;
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  float* bias_partials = nullptr;
  std::map<GemmKey, std::unique_ptr<GemmPlan>> plans;
};

bool fused_epilogues_from_environment() {
  const char* value = std::getenv("ZT_CUBLASLT_EPILOGUES");
  if (value == nullptr || std::strcmp(value, "1") == 0) return true;
  require(std::strcmp(value, "0") == 0, "ZT_CUBLASLT_EPILOGUES=", value,
          ": expected 1 (fuse the bias and GELU into cuBLASLt's epilogues, the default) or 0 (plain GEMMs)");
  return false;
}

MatmulContext::MatmulContext(size_t workspace_bytes, bool fused_epilogues) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.fused_epilogues = fused_epilogues;
  ZT_CUDA_CHECK(cudaGetDevice(&s.device));
  ZT_CUBLAS_CHECK(cublasLtCreate(&s.handle));
  s.workspace_bytes = workspace_bytes;
  try {
    if (workspace_bytes) ZT_CUDA_CHECK(cudaMalloc(&s.workspace, workspace_bytes));
    ZT_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&s.bias_partials), kBiasPartialFloats * sizeof(float)));
  } catch (...) {
    cudaFree(s.workspace);
    cublasLtDestroy(s.handle);
    throw;
  }
}

MatmulContext::~MatmulContext() {
  // Errors are not reported from a destructor; a sticky device error surfaces at the next call.
  impl_->plans.clear();  // before the handle they were made with
  cudaFree(impl_->bias_partials);
  cudaFree(impl_->workspace);
  cublasLtDestroy(impl_->handle);
}

namespace {

// The largest power of two (up to 16) dividing the address: what cuBLASLt may assume of it. No
// kernel loads more than 16 bytes at once, and a cap that every buffer of the model meets makes the
// heuristic's choice, and so the bits, independent of where a tensor lies (a group's parameters
// resident at stages 0-2 or gathered into a pool buffer at stage 3).
uint32_t alignment_of(const void* p) {
  const auto address = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 16;
  while (a > 1 && address % a != 0) a /= 2;
  return a;
}

cudaDataType_t cuda_type(DType dt) { return dt == DType::F32 ? CUDA_R_32F : CUDA_R_16BF; }

const char* epilogue_name(cublasLtEpilogue_t epilogue) {
  switch (epilogue) {
    case CUBLASLT_EPILOGUE_BIAS: return "BIAS";
    case CUBLASLT_EPILOGUE_GELU_AUX: return "GELU_AUX";
    case CUBLASLT_EPILOGUE_GELU_AUX_BIAS: return "GELU_AUX_BIAS";
    case CUBLASLT_EPILOGUE_DGELU: return "DGELU";
    default: return "DEFAULT";
  }
}

// Said once per shape: its plan keeps the refusal, and later calls take the plain path at once.
void warn_fallback(DType dt, const Gemm& g, const char* why) {
  std::ostringstream message;
  message << "cuBLASLt " << why << " the " << epilogue_name(g.epilogue) << " epilogue for m = " << g.m
          << ", n = " << g.n << ", k = " << g.k << " in " << dtype_name(dt)
          << ": a plain GEMM and separate kernels compute it (ZT_CUBLASLT_EPILOGUES=0 does so everywhere)";
  warn(message.str());
}

template <typename V>
void set_desc(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const V& value) {
  ZT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(value)));
}

template <typename V>
void set_pref(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const V& value) {
  ZT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &value, sizeof(value)));
}

// The plan of g's shape, made on first use: descriptors with g's attributes (its pointers set
// too, as the heuristic looks at them), layouts, and the heuristic's answer. A plain GEMM's error
// status throws (and is asked again next time); no algorithm is kept as an answer.
GemmPlan& plan_for(MatmulContext::Impl& ctx, DType dt, const Gemm& g) {
  const GemmKey key{int64_t(dt), g.trans_a,         g.trans_b,         g.m,       g.n,
                    g.k,           g.lda,             g.ldb,             g.ldd,     int64_t(g.epilogue),
                    g.bias != nullptr, g.aux != nullptr, alignment_of(g.A), alignment_of(g.B), alignment_of(g.D)};
  std::unique_ptr<GemmPlan>& slot = ctx.plans[key];
  if (slot) return *slot;
  auto s = std::make_unique<GemmPlan>();
  const cudaDataType_t type = cuda_type(dt);
  ZT_CUBLAS_CHECK(cublasLtMatmulDescCreate(&s->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const int32_t trans_a = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int32_t trans_b = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  set_desc(s->op, CUBLASLT_MATMUL_DESC_TRANSA, trans_a);
  set_desc(s->op, CUBLASLT_MATMUL_DESC_TRANSB, trans_b);
  set_desc(s->op, CUBLASLT_MATMUL_DESC_EPILOGUE, uint32_t(g.epilogue));
  if (g.bias) {
    set_desc(s->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, g.bias);
    set_desc(s->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, int32_t(type));
  }
  if (g.aux) {
    set_desc(s->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, g.aux);
    set_desc(s->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, int64_t(g.ldd));
  }
  // Stored shapes: op(A) is m x k, so A lies k x m when transposed; likewise B.
  ZT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&s->a, type, g.trans_a ? g.k : g.m, g.trans_a ? g.m : g.k, g.lda));
  ZT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&s->b, type, g.trans_b ? g.n : g.k, g.trans_b ? g.k : g.n, g.ldb));
  ZT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&s->d, type, g.m, g.n, g.ldd));
  ZT_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&s->pref));
  set_pref(s->pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64_t(ctx.workspace_bytes));
  set_pref(s->pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignment_of(g.A));
  set_pref(s->pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignment_of(g.B));
  set_pref(s->pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignment_of(g.D));
  set_pref(s->pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignment_of(g.D));

  int found = 0;
  const cublasStatus_t status =
      cublasLtMatmulAlgoGetHeuristic(ctx.handle, s->op, s->a, s->b, s->d, s->d, s->pref, 1, &s->heuristic, &found);
  s->found = status == CUBLAS_STATUS_SUCCESS && found > 0;
  // No algorithm: a fused epilogue falls back to a plainer call (whatever the status); a plain
  // GEMM reports an error status, or else that nothing was found (require_gemm).
  const bool plain = g.epilogue == CUBLASLT_EPILOGUE_DEFAULT;
  if (!s->found && plain && status != CUBLAS_STATUS_SUCCESS && status != CUBLAS_STATUS_NOT_SUPPORTED)
    ZT_CUBLAS_CHECK(status);
  if (!s->found && !plain) warn_fallback(dt, g, "has no algorithm for");
  slot = std::move(s);
  return *slot;
}

// Runs g; false when cuBLASLt has no algorithm for it, or refuses its epilogue when called (the
// caller falls back to a plainer call), any other failure throws.
bool run_gemm(MatmulContext::Impl& ctx, DType dt, const Gemm& g, cudaStream_t stream) {
  GemmPlan& s = plan_for(ctx, dt, g);
  if (!s.found) return false;
  // This call's pointers; cuBLASLt reads the descriptor when the call is made.
  if (g.bias) set_desc(s.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, g.bias);
  if (g.aux) set_desc(s.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, g.aux);
  const float alpha = 1.0f;
  const cublasStatus_t status = cublasLtMatmul(ctx.handle, s.op, &alpha, g.A, s.a, g.B, s.b, &g.beta, g.D, s.d, g.D,
                                               s.d, &s.heuristic.algo, ctx.workspace, ctx.workspace_bytes, stream);
  // NOT_SUPPORTED comes before anything is queued: the plainer call computes the same product.
  if (status == CUBLAS_STATUS_NOT_SUPPORTED && g.epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
    s.found = false;
    warn_fallback(dt, g, "refused");
    return false;
  }
  ZT_CUBLAS_CHECK(status);
  return true;
}

void require_gemm(MatmulContext::Impl& ctx, DType dt, const Gemm& g, cudaStream_t stream, const char* what) {
  require(run_gemm(ctx, dt, g, stream), what, ": cuBLASLt has no algorithm for m = ", g.m, ", n = ", g.n, ", k = ", g.k,
          " in ", dtype_name(dt), " with these pointer alignments");
}

void add_bias(DType dt, void* out, const void* bias, int N, int OC, cudaStream_t stream) {
  const unsigned grid = grid_size(size_t(N) * OC, kBiasBlock, "matmul_forward");
  dispatch_activation(dt, "matmul_forward", [&](auto tag) {
    using T = decltype(tag);
    launch(add_bias_kernel<T>, grid, kBiasBlock, 0, stream, "add_bias_kernel", static_cast<T*>(out),
           static_cast<const T*>(bias), N, OC);
  });
}

// Row-major out[rows, cols] = x[rows, inner] · y[inner, cols] (+ out when accumulating), x stored
// as [inner, rows] when x_transposed, y as [cols, inner] when y_transposed. In cuBLASLt's
// column-major terms (matmul.hpp): outᵀ (cols x rows) = yᵀ · xᵀ on the buffers as they lie.
Gemm row_major_gemm(void* out, const void* x, bool x_transposed, const void* y, bool y_transposed, int rows, int inner,
                    int cols, bool accumulate) {
  Gemm g;
  g.m = cols;
  g.n = rows;
  g.k = inner;
  g.A = y;
  g.trans_a = y_transposed;
  g.lda = y_transposed ? inner : cols;
  g.B = x;
  g.trans_b = x_transposed;
  g.ldb = x_transposed ? rows : inner;
  g.D = out;
  g.ldd = cols;
  g.beta = accumulate ? 1.0f : 0.0f;
  return g;
}

// out[N, OC] = inp[N, C] · W, W stored [C, OC] (InputMajor) or [OC, C] (OutputMajor).
Gemm forward_gemm(const void* inp, const void* weight, void* out, int N, int C, int OC, WeightLayout layout) {
  return row_major_gemm(out, inp, false, weight, layout == WeightLayout::OutputMajor, N, C, OC, false);
}

// Whether cuBLASLt's epilogue may read the bias: its kernels load it 16 bytes at a time and fault
// on a bias less aligned than that (the heuristic does not look at the bias pointer).
bool epilogue_takes_bias(const void* bias) { return bias == nullptr || aligned16(bias); }

// out = gemm + bias, through the epilogue when cuBLASLt takes it, else a separate kernel.
void gemm_with_bias(MatmulContext::Impl& ctx, DType dt, Gemm g, const void* bias, int N, int OC,
                    cudaStream_t stream) {
  if (bias && ctx.fused_epilogues && epilogue_takes_bias(bias)) {
    g.epilogue = CUBLASLT_EPILOGUE_BIAS;
    g.bias = bias;
    if (run_gemm(ctx, dt, g, stream)) return;
    g.epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    g.bias = nullptr;
  }
  require_gemm(ctx, dt, g, stream, "matmul_forward");
  if (bias) add_bias(dt, g.D, bias, N, OC, stream);
}

void check_args(MatmulContext& ctx, DType dt, int N, int C, int OC, const char* op) {
  require(N >= 0 && C > 0 && OC > 0, op, ": bad shape N = ", N, ", C = ", C, ", OC = ", OC);
  require(dt == DType::F32 || dt == DType::BF16, op, ": ", dtype_name(dt), " is not supported (fp32 or bf16)");
  int device = -1;
  ZT_CUDA_CHECK(cudaGetDevice(&device));
  require(device == ctx.impl().device, op, ": the MatmulContext belongs to device ", ctx.impl().device,
          ", the current device is ", device);
}

}  // namespace

void matmul_forward(MatmulContext& ctx, DType dt, void* out, const void* inp, const void* weight, const void* bias,
                    int N, int C, int OC, WeightLayout layout, cudaStream_t stream, void* pre_gelu) {
  check_args(ctx, dt, N, C, OC, "matmul_forward");
  if (N == 0) return;
  MatmulContext::Impl& s = ctx.impl();
  Gemm g = forward_gemm(inp, weight, out, N, C, OC, layout);
  if (!pre_gelu) return gemm_with_bias(s, dt, g, bias, N, OC, stream);
  // GELU fused into the epilogue in bf16 (its GELU is not the CPU's to fp32 rounding); the GELU
  // input's leading dimension must be a multiple of 8, and the aux matrix 16-byte aligned.
  if (s.fused_epilogues && dt == DType::BF16 && OC % 8 == 0 && aligned16(pre_gelu) && epilogue_takes_bias(bias)) {
    g.epilogue = bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX;
    g.bias = bias;
    g.aux = pre_gelu;
    if (run_gemm(s, dt, g, stream)) return;
    g = forward_gemm(inp, weight, out, N, C, OC, layout);
  }
  g.D = pre_gelu;
  gemm_with_bias(s, dt, g, bias, N, OC, stream);
  gelu_forward(dt, out, pre_gelu, size_t(N) * OC, stream);
}

void matmul_backward(MatmulContext& ctx, DType dt, void* dinp, void* dweight, void* dbias, const void* dout,
                     const void* inp, const void* weight, int N, int C, int OC, WeightLayout layout,
                     cudaStream_t stream, GradInto dinp_into) {
  check_args(ctx, dt, N, C, OC, "matmul_backward");
  if (N == 0) return;
  MatmulContext::Impl& s = ctx.impl();
  const bool input_major = layout == WeightLayout::InputMajor;
  if (dinp)  // dinp[N, C] (+)= dout[N, OC] · Wᵀ
    require_gemm(s, dt,
                 row_major_gemm(dinp, dout, false, weight, input_major, N, OC, C, dinp_into == GradInto::Accumulate),
                 stream, "matmul_backward (dinp)");
  if (dweight) {  // dW += inpᵀ · dout as [C, OC] (InputMajor), or dWᵀ += doutᵀ · inp as [OC, C]
    const Gemm g = input_major ? row_major_gemm(dweight, inp, true, dout, false, C, N, OC, true)
                               : row_major_gemm(dweight, dout, true, inp, false, OC, N, C, true);
    require_gemm(s, dt, g, stream, "matmul_backward (dweight)");
  }
  if (dbias) {
    const ColumnChunking chunking =
        column_chunking(N, OC, 1, 256, MatmulContext::kBiasPartialFloats, "matmul_backward (dbias)");
    dispatch_activation(dt, "matmul_backward", [&](auto tag) {
      using T = decltype(tag);
      const ColumnOutputs<1, T> outputs{{static_cast<T*>(dbias)}};
      column_sums(outputs, s.bias_partials, N, OC, chunking, DoutTerm<T>{static_cast<const T*>(dout), OC}, stream);
    });
  }
}

void matmul_backward_gelu(MatmulContext& ctx, DType dt, void* dpre, void* dgelu, void* dweight, void* dbias,
                          const void* dout, const void* gelu_out, const void* pre, const void* weight, int N, int C,
                          int OC, WeightLayout layout, cudaStream_t stream, GradInto dpre_into) {
  check_args(ctx, dt, N, C, OC, "matmul_backward_gelu");
  if (N == 0) return;
  matmul_backward(ctx, dt, nullptr, dweight, dbias, dout, gelu_out, weight, N, C, OC, layout, stream);
  // bf16: the GELU gradient in the product's epilogue, from its fp32 result (the aux matrix, pre,
  // needs a leading dimension that is a multiple of 8 and 16-byte alignment).
  if (ctx.impl().fused_epilogues && dt == DType::BF16 && dpre_into == GradInto::Overwrite && C % 8 == 0 &&
      aligned16(pre)) {
    Gemm g = row_major_gemm(dpre, dout, false, weight, layout == WeightLayout::InputMajor, N, OC, C, false);
    g.epilogue = CUBLASLT_EPILOGUE_DGELU;
    g.aux = const_cast<void*>(pre);  // read, not written, by this epilogue
    if (run_gemm(ctx.impl(), dt, g, stream)) return;
  }
  matmul_backward(ctx, dt, dgelu, nullptr, nullptr, dout, gelu_out, weight, N, C, OC, layout, stream,
                  GradInto::Overwrite);
  gelu_backward(dt, dpre, pre, dgelu, size_t(N) * size_t(C), stream, dpre_into);
}

}  // namespace zt::cuda
