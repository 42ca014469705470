// The cuBLASLt calls of lib/kernels/cuda/cuda_matmul.cu for the emulated build: an implementation of
// cublasLtMatmul's documented column-major semantics,
//   D = epilogue(alpha · op(A) · op(B) + beta · C + bias),
// with op = transpose when TRANSA/TRANSB say so, bias a vector over D's rows, the GELU epilogues
// writing their input (the pre-activation) to the aux matrix, and DGELU multiplying the product by
// the GELU's gradient at the aux matrix (the tanh approximation's derivative). The product is queued on
// the stream like any kernel (emulated_device.hpp) and accumulates as a GPU GEMM does: in fp32,
// fp32 inputs by fused multiply-adds in k order, bf16 inputs in blocks of 16 products (one MMA)
// added to the fp32 accumulator, k beyond 4096 split into slices summed at the end (split-K;
// ZT_EMU_SPLIT_K sets the slice).
// Where the library refuses, so does the stub: inconsistent shapes, leading dimensions shorter
// than the rows, an aux leading dimension not a multiple of 8, a bias of another type, types
// other than fp32 and bf16. Where the library faults at run time, so does the stub (a sticky
// error, as on a GPU): a bias or aux pointer not 16-byte aligned, or an A, B or D pointer less
// aligned than the preference the algorithm was chosen with. It counts the objects a caller makes
// (descriptors, layouts, preferences, heuristic queries: zt::emu::cublaslt_creations), so a test
// can tell a per-shape cache from objects made per call, and the calls with a fused epilogue; a test
// may have it refuse those epilogues (zt::emu::cublaslt_answer_epilogues).
#include <cublasLt.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "core/dtype.hpp"
#include "emulated_device.hpp"

namespace {

struct Desc {
  int32_t transa = CUBLAS_OP_N, transb = CUBLAS_OP_N;
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;
  int32_t bias_type = -1;
  void* aux = nullptr;
  int64_t aux_ld = 0;
};

struct Layout {
  cudaDataType type;
  uint64_t rows, cols;
  int64_t ld;
};

std::mutex mutex;  // the descriptors, made and used from any thread
uint64_t creations = 0;  // descriptors, layouts, preferences and heuristic queries (under mutex)
std::map<const void*, Desc> descs;
std::map<const void*, Layout> layouts;
std::map<const void*, std::array<uint32_t, 4>> preferences;  // minimum alignments of A, B, C, D
zt::emu::EpilogueAnswer epilogue_answer = zt::emu::EpilogueAnswer::Run;
uint64_t epilogue_calls = 0;

// A new opaque object of kind H, recorded in `table` with `value`: a creation.
template <typename H, typename Value>
cublasStatus_t create_object(H** object, std::map<const void*, Value>& table, Value value) {
  std::lock_guard lock(mutex);
  ++creations;
  *object = new H{};
  table[*object] = std::move(value);
  return CUBLAS_STATUS_SUCCESS;
}

template <typename H, typename Value>
cublasStatus_t destroy_object(H* object, std::map<const void*, Value>& table) {
  std::lock_guard lock(mutex);
  table.erase(object);
  delete object;
  return CUBLAS_STATUS_SUCCESS;
}

constexpr uint64_t kMmaK = 16;  // products one bf16 MMA sums before the accumulator

// k per slice of a split-K product: 4096, or ZT_EMU_SPLIT_K (a measurement of how much the
// summation order moves a result: bench/cuda/fp32_tolerance.sh).
uint64_t split_k() {
  static const uint64_t k = [] {
    const char* v = std::getenv("ZT_EMU_SPLIT_K");
    return v ? std::max<uint64_t>(1, std::strtoull(v, nullptr, 10)) : uint64_t(4096);
  }();
  return k;
}

uint32_t alignment(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  uint32_t r = 256;
  while (r > 1 && a % r) r /= 2;
  return r;
}

template <typename V>
bool read(const void* buf, size_t size, V& out) {
  if (size != sizeof(V)) return false;
  std::memcpy(&out, buf, sizeof(V));
  return true;
}

float load(cudaDataType t, const void* p, size_t i) {
  if (t == CUDA_R_32F) return static_cast<const float*>(p)[i];
  uint16_t h;
  std::memcpy(&h, static_cast<const char*>(p) + 2 * i, 2);
  return zt::bf16_to_f32(h);
}

void store(cudaDataType t, void* p, size_t i, float v) {
  if (t == CUDA_R_32F) {
    static_cast<float*>(p)[i] = v;
    return;
  }
  const uint16_t h = zt::f32_to_bf16(v);
  std::memcpy(static_cast<char*>(p) + 2 * i, &h, 2);
}

float gelu_tanh(float x) {
  return 0.5f * x * (1.0f + std::tanh(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}

// d/dx gelu_tanh(x), the tanh approximation's derivative.
float gelu_tanh_grad(float x) {
  const float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  const float t = std::tanh(u);
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * 0.7978845608028654f * (1.0f + 3.0f * 0.044715f * x * x);
}

bool has(uint32_t epilogue, uint32_t bit) { return (epilogue & bit) == bit; }

struct Shape {
  uint64_t m, n, k;
};

// The problem's shape, or false when the descriptors do not describe one.
bool shape_of(const Desc& d, const Layout& a, const Layout& b, const Layout& c, Shape& s) {
  s.m = c.rows;
  s.n = c.cols;
  const uint64_t a_rows = d.transa == CUBLAS_OP_T ? a.cols : a.rows, a_cols = d.transa == CUBLAS_OP_T ? a.rows : a.cols;
  const uint64_t b_rows = d.transb == CUBLAS_OP_T ? b.cols : b.rows, b_cols = d.transb == CUBLAS_OP_T ? b.rows : b.cols;
  s.k = a_cols;
  for (const Layout* l : {&a, &b, &c})
    if (l->ld < int64_t(l->rows) || (l->type != CUDA_R_32F && l->type != CUDA_R_16BF)) return false;
  return a_rows == s.m && b_rows == s.k && b_cols == s.n && a.type == b.type && b.type == c.type;
}

// Σ_p op(A)[i, p] · op(B)[p, j], accumulated as the GPU orders it.
float product(const Desc& desc, const Layout& la, const Layout& lb, const void* A, const void* B, uint64_t i,
              uint64_t j, uint64_t k) {
  auto a_at = [&](uint64_t p) {
    return load(la.type, A, desc.transa == CUBLAS_OP_T ? p + i * uint64_t(la.ld) : i + p * uint64_t(la.ld));
  };
  auto b_at = [&](uint64_t p) {
    return load(lb.type, B, desc.transb == CUBLAS_OP_T ? j + p * uint64_t(lb.ld) : p + j * uint64_t(lb.ld));
  };
  float total = 0.0f;
  const uint64_t slice = split_k();
  for (uint64_t s0 = 0; s0 < k; s0 += slice) {
    const uint64_t s1 = std::min(k, s0 + slice);
    float acc = 0.0f;
    if (la.type == CUDA_R_32F) {
      for (uint64_t p = s0; p < s1; p++) acc = std::fma(a_at(p), b_at(p), acc);
    } else {
      for (uint64_t p0 = s0; p0 < s1; p0 += kMmaK) {
        double block = 0;  // bf16 products are exact in fp32; one MMA rounds its sum once
        for (uint64_t p = p0; p < std::min(s1, p0 + kMmaK); p++) block += double(a_at(p)) * double(b_at(p));
        acc += float(block);
      }
    }
    total = s0 == 0 ? acc : total + acc;
  }
  return total;
}

}  // namespace

uint64_t zt::emu::cublaslt_creations() {
  std::lock_guard lock(mutex);
  return creations;
}

void zt::emu::cublaslt_answer_epilogues(EpilogueAnswer answer) {
  std::lock_guard lock(mutex);
  epilogue_answer = answer;
}

uint64_t zt::emu::cublaslt_epilogue_calls() {
  std::lock_guard lock(mutex);
  return epilogue_calls;
}

extern "C" {

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  static int dummy;
  *handle = reinterpret_cast<cublasLtHandle_t>(&dummy);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtDestroy(cublasLtHandle_t) { return CUBLAS_STATUS_SUCCESS; }
const char* cublasLtGetStatusName(cublasStatus_t) { return "CUBLAS_STATUS_EMULATED"; }
const char* cublasLtGetStatusString(cublasStatus_t) { return "error in the emulated cuBLASLt"; }

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute, cudaDataType_t scale) {
  if (compute != CUBLAS_COMPUTE_32F || scale != CUDA_R_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
  return create_object(desc, descs, Desc{});
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) { return destroy_object(desc, descs); }
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                                              const void* buf, size_t size) {
  std::lock_guard lock(mutex);
  Desc& d = descs.at(desc);
  bool ok = false;
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA: ok = read(buf, size, d.transa); break;
    case CUBLASLT_MATMUL_DESC_TRANSB: ok = read(buf, size, d.transb); break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE: ok = read(buf, size, d.epilogue); break;
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER: ok = read(buf, size, d.bias); break;
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: ok = read(buf, size, d.bias_type); break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER: ok = read(buf, size, d.aux); break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD: ok = read(buf, size, d.aux_ld); break;
    default: break;
  }
  return ok ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
  return create_object(layout, layouts, Layout{type, rows, cols, ld});
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) { return destroy_object(layout, layouts); }

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  return create_object(pref, preferences, std::array<uint32_t, 4>{1, 1, 1, 1});
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  return destroy_object(pref, preferences);
}
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
                                                    size_t size) {
  std::lock_guard lock(mutex);
  auto& p = preferences.at(pref);
  switch (attr) {
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
      return read(buf, size, p[0]) ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
      return read(buf, size, p[1]) ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
      return read(buf, size, p[2]) ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
      return read(buf, size, p[3]) ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
    default: return CUBLAS_STATUS_SUCCESS;
  }
}

// The algorithm found carries the alignments it was chosen for (an A, B or D pointer less aligned
// than that at cublasLtMatmul faults, as the real kernels' vector loads would).
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t, cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t a,
                                              cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
                                              cublasLtMatrixLayout_t d, cublasLtMatmulPreference_t pref, int requested,
                                              cublasLtMatmulHeuristicResult_t results[], int* found) {
  std::lock_guard lock(mutex);
  ++creations;
  const Desc& desc = descs.at(op);
  Shape s;
  if (requested < 1 || c != d || !shape_of(desc, layouts.at(a), layouts.at(b), layouts.at(d), s))
    return CUBLAS_STATUS_INVALID_VALUE;
  const bool bias = has(desc.epilogue, CUBLASLT_EPILOGUE_BIAS);
  const bool gelu = has(desc.epilogue, CUBLASLT_EPILOGUE_GELU_AUX) || has(desc.epilogue, CUBLASLT_EPILOGUE_DGELU);
  if (bias && (desc.bias == nullptr || desc.bias_type != int32_t(layouts.at(d).type)))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (gelu && (desc.aux == nullptr || desc.aux_ld % 8 != 0 || desc.aux_ld < int64_t(s.m)))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (desc.epilogue != CUBLASLT_EPILOGUE_DEFAULT && epilogue_answer == zt::emu::EpilogueAnswer::NoAlgorithm) {
    *found = 0;
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  results[0] = cublasLtMatmulHeuristicResult_t{};
  results[0].state = CUBLAS_STATUS_SUCCESS;
  const auto& p = preferences.at(pref);
  std::memcpy(results[0].algo.data, p.data(), sizeof p);
  *found = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t op, const void* alpha_p, const void* A,
                              cublasLtMatrixLayout_t a, const void* B, cublasLtMatrixLayout_t b, const void* beta_p,
                              const void* C, cublasLtMatrixLayout_t c, void* D, cublasLtMatrixLayout_t d,
                              const cublasLtMatmulAlgo_t* algo, void*, size_t, cudaStream_t stream) {
  std::unique_lock lock(mutex);
  const Desc desc = descs.at(op);
  const Layout la = layouts.at(a), lb = layouts.at(b), ld = layouts.at(d);
  if (desc.epilogue != CUBLASLT_EPILOGUE_DEFAULT && epilogue_answer != zt::emu::EpilogueAnswer::Run)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  lock.unlock();
  Shape s;
  if (C != D || c != d || !shape_of(desc, la, lb, ld, s) || algo == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  std::array<uint32_t, 4> promised;
  std::memcpy(promised.data(), algo->data, sizeof promised);
  // Host pointer mode: alpha and beta are read at the call.
  const float alpha = *static_cast<const float*>(alpha_p), beta = *static_cast<const float*>(beta_p);
  if (desc.epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
    lock.lock();
    ++epilogue_calls;
    lock.unlock();
  }
  zt::emu::enqueue(stream, "cublasLtMatmul", [=] {
    const bool bias = has(desc.epilogue, CUBLASLT_EPILOGUE_BIAS);
    const bool gelu = has(desc.epilogue, CUBLASLT_EPILOGUE_GELU_AUX);
    const bool dgelu = has(desc.epilogue, CUBLASLT_EPILOGUE_DGELU);
    if ((bias && alignment(desc.bias) < 16) || ((gelu || dgelu) && alignment(desc.aux) < 16))
      return zt::emu::fault(cudaErrorMisalignedAddress,
                            "cublasLtMatmul: epilogue bias or aux pointer not 16-byte aligned");
    if (alignment(A) < promised[0] || alignment(B) < promised[1] || alignment(D) < promised[3])
      return zt::emu::fault(cudaErrorMisalignedAddress, "cublasLtMatmul: a matrix less aligned than its algorithm's");
    std::vector<float> column(s.m);
    for (uint64_t j = 0; j < s.n; j++) {
      for (uint64_t i = 0; i < s.m; i++) {
        const size_t di = i + j * uint64_t(ld.ld);
        float v = alpha * product(desc, la, lb, A, B, i, j, s.k);
        if (beta != 0.0f) v = std::fma(beta, load(ld.type, D, di), v);
        if (bias) v += load(ld.type, desc.bias, i);
        if (gelu) {
          store(ld.type, desc.aux, i + j * uint64_t(desc.aux_ld), v);
          v = gelu_tanh(v);
        }
        if (dgelu) v *= gelu_tanh_grad(load(ld.type, desc.aux, i + j * uint64_t(desc.aux_ld)));
        column[i] = v;
      }
      for (uint64_t i = 0; i < s.m; i++) store(ld.type, D, i + j * uint64_t(ld.ld), column[i]);
    }
  });
  return CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"
