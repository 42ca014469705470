// The cuBLASLt calls of lib/kernels/cuda/matmul.cu for the emulated build: a reference
// implementation of cublasLtMatmul's documented column-major semantics,
//   D = epilogue(alpha · op(A) · op(B) + beta · C + bias),
// with op = transpose when TRANSA/TRANSB say so, bias a vector over D's rows, and the GELU
// epilogues writing their input (the pre-activation) to the aux matrix. Accumulation is in double.
// It checks what the real library would refuse: inconsistent shapes, leading dimensions shorter
// than the rows, an aux leading dimension not a multiple of 8, types other than fp32 and bf16.
// Bias and aux pointers that are not 16-byte aligned get no algorithm, so matmul.cu's fallbacks run.
#include <cublasLt.h>
#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>

#include "core/dtype.hpp"

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

std::map<const void*, Desc> descs;
std::map<const void*, Layout> layouts;

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

}  // namespace

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
  *desc = new cublasLtMatmulDescOpaque_t{};
  descs[*desc] = Desc{};
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  descs.erase(desc);
  delete desc;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                                              const void* buf, size_t size) {
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
  *layout = new cublasLtMatrixLayoutOpaque_t{};
  layouts[*layout] = Layout{type, rows, cols, ld};
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  layouts.erase(layout);
  delete layout;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  *pref = new cublasLtMatmulPreferenceOpaque_t{};
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  delete pref;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t,
                                                    const void*, size_t) {
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t, cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t a,
                                              cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
                                              cublasLtMatrixLayout_t d, cublasLtMatmulPreference_t, int requested,
                                              cublasLtMatmulHeuristicResult_t results[], int* found) {
  const Desc& desc = descs.at(op);
  Shape s;
  if (requested < 1 || c != d || !shape_of(desc, layouts.at(a), layouts.at(b), layouts.at(d), s))
    return CUBLAS_STATUS_INVALID_VALUE;
  const bool bias = has(desc.epilogue, CUBLASLT_EPILOGUE_BIAS);
  const bool gelu = has(desc.epilogue, CUBLASLT_EPILOGUE_GELU_AUX);
  if (bias && (desc.bias == nullptr || desc.bias_type != int32_t(layouts.at(d).type)))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (gelu && (desc.aux == nullptr || desc.aux_ld % 8 != 0 || desc.aux_ld < int64_t(s.m)))
    return CUBLAS_STATUS_INVALID_VALUE;
  *found = 0;
  if ((bias && reinterpret_cast<uintptr_t>(desc.bias) % 16) || (gelu && reinterpret_cast<uintptr_t>(desc.aux) % 16))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  results[0] = cublasLtMatmulHeuristicResult_t{};
  results[0].state = CUBLAS_STATUS_SUCCESS;
  *found = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t op, const void* alpha_p, const void* A,
                              cublasLtMatrixLayout_t a, const void* B, cublasLtMatrixLayout_t b, const void* beta_p,
                              const void* C, cublasLtMatrixLayout_t c, void* D, cublasLtMatrixLayout_t d,
                              const cublasLtMatmulAlgo_t*, void*, size_t, cudaStream_t) {
  const Desc& desc = descs.at(op);
  const Layout &la = layouts.at(a), &lb = layouts.at(b), &ld = layouts.at(d);
  Shape s;
  if (C != D || c != d || !shape_of(desc, la, lb, ld, s)) return CUBLAS_STATUS_INVALID_VALUE;
  const float alpha = *static_cast<const float*>(alpha_p), beta = *static_cast<const float*>(beta_p);
  const bool bias = has(desc.epilogue, CUBLASLT_EPILOGUE_BIAS);
  const bool gelu = has(desc.epilogue, CUBLASLT_EPILOGUE_GELU_AUX);
  for (uint64_t j = 0; j < s.n; j++)
    for (uint64_t i = 0; i < s.m; i++) {
      double acc = 0;
      for (uint64_t p = 0; p < s.k; p++) {
        const size_t ai = desc.transa == CUBLAS_OP_T ? p + i * uint64_t(la.ld) : i + p * uint64_t(la.ld);
        const size_t bi = desc.transb == CUBLAS_OP_T ? j + p * uint64_t(lb.ld) : p + j * uint64_t(lb.ld);
        acc += double(load(la.type, A, ai)) * double(load(lb.type, B, bi));
      }
      const size_t di = i + j * uint64_t(ld.ld);
      float v = float(double(alpha) * acc + (beta != 0.0f ? double(beta) * load(ld.type, D, di) : 0.0));
      if (bias) v += load(ld.type, desc.bias, i);
      if (gelu) {
        store(ld.type, desc.aux, i + j * uint64_t(desc.aux_ld), v);
        v = gelu_tanh(v);
      }
      store(ld.type, D, di, v);
    }
  return CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"
