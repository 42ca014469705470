#include "kernels/cuda/cuda_model_ops.hpp"

#include <algorithm>
#include <climits>
#include <limits>

#include "core/error.hpp"
#include "core/ledger.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/cuda_kernels.hpp"
#include "kernels/cuda/kv_attention.hpp"

namespace zt::cuda {

namespace {
// The model checks every token against the vocabulary on the host before it reaches the device
// (Gpt::forward), so the embedding kernels' own bound is only the int range.
constexpr int kTokenBound = INT_MAX;

// The cuBLASLt workspace and bias partials of a MatmulContext (allocated by it, counted here).
constexpr size_t kMatmulContextBytes =
    MatmulContext::kDefaultWorkspaceBytes + MatmulContext::kBiasPartialFloats * sizeof(float);
}  // namespace

CudaModelOps::CudaModelOps(CudaDevice& device, DType dtype) : device_(device), dtype_(dtype) {
  if (dtype != DType::F32 && dtype != DType::BF16)
    fail("the CUDA model operators compute in fp32 or bf16, not {}", dtype_name(dtype));
  ZT_CUDA_CHECK(cudaSetDevice(device.ordinal()));
  matmul_ = std::make_unique<MatmulContext>();
  MemoryLedger::instance().add(MemSpace::Device, MemCategory::Activations, kMatmulContextBytes);
  mean_loss_ = Buffer<float>(device, MemSpace::Device, MemCategory::Activations, 1);
  mean_loss_host_ = Buffer<float>(device, MemSpace::Pinned, MemCategory::Activations, 1);
  loss_sum_ = Buffer<double>(device, MemSpace::Device, MemCategory::Activations, 1);
  loss_sum_host_ = Buffer<double>(device, MemSpace::Pinned, MemCategory::Activations, 1);
}

CudaModelOps::~CudaModelOps() {
  MemoryLedger::instance().sub(MemSpace::Device, MemCategory::Activations, kMatmulContextBytes);
}

// What the constructor and scratch() allocate for B x T tokens: the matmul context, the mean loss and
// the kept losses' sum (device and pinned), the norms' column partials (LayerNorm's 2·C per chunk of
// rows bound RMSNorm's C and the q/k norms' 2·hd, heads being no wider than the model), the
// embedding backward's workspace.
size_t CudaModelOps::own_bytes(int B, int T, int C) const {
  const size_t N = size_t(B) * size_t(T);
  return kMatmulContextBytes + 2 * sizeof(float) + 2 * sizeof(double) +
         std::max<size_t>(1, layernorm_backward_scratch_floats(int(N), C)) * sizeof(float) +
         embedding_backward_workspace_bytes(B, T);
}

float* CudaModelOps::norm_scratch(size_t floats) {
  return static_cast<float*>(scratch(norm_scratch_, std::max<size_t>(1, floats) * sizeof(float)));
}

void* CudaModelOps::scratch(Buffer<uint8_t>& buffer, size_t bytes) {
  if (buffer.size() < bytes) {
    buffer.reset();
    buffer = Buffer<uint8_t>(device_, MemSpace::Device, MemCategory::Activations, bytes, Init::Uninitialised);
  }
  return buffer.data();
}

void CudaModelOps::embedding_forward(void* out, const int32_t* tokens, const void* wte, const void* wpe,
                                     const TokenSegment* segments, int B, int T, int C) {
  cuda::embedding_forward(dtype_, out, tokens, wte, wpe, B, T, C, kTokenBound, stream(), segments);
}

void CudaModelOps::embedding_backward(void* dwte, void* dwpe, const void* dout, const int32_t* tokens,
                                      const TokenSegment* segments, int B, int T, int C) {
  const size_t bytes = dwte ? embedding_backward_workspace_bytes(B, T) : 0;
  void* workspace = bytes ? scratch(embedding_workspace_, bytes) : nullptr;
  cuda::embedding_backward(dtype_, dwte, dwpe, workspace, bytes, dout, tokens, B, T, C, kTokenBound, stream(),
                           segments);
}

void CudaModelOps::layernorm_forward(void* out, float* mean, float* rstd, const void* inp, const void* weight,
                                     const void* bias, int N, int C) {
  cuda::layernorm_forward(dtype_, out, mean, rstd, inp, weight, bias, N, C, stream());
}

void CudaModelOps::layernorm_backward(void* dinp, void* dweight, void* dbias, const void* dout, const void* inp,
                                      const void* weight, const float* mean, const float* rstd, int N, int C,
                                      GradInto dinp_into) {
  float* partials = norm_scratch(layernorm_backward_scratch_floats(N, C));
  cuda::layernorm_backward(dtype_, dinp, dweight, dbias, partials, dout, inp, weight, mean, rstd, N, C, stream(),
                           dinp_into);
}

void CudaModelOps::residual_layernorm_forward(void* residual, void* out, float* mean, float* rstd, const void* a,
                                              const void* b, const void* weight, const void* bias, int N, int C) {
  cuda::residual_layernorm_forward(dtype_, residual, out, mean, rstd, a, b, weight, bias, N, C, stream());
}

void CudaModelOps::matmul_forward(void* out, const void* inp, const void* weight, const void* bias, int N, int C,
                                  int OC, WeightLayout layout) {
  cuda::matmul_forward(*matmul_, dtype_, out, inp, weight, bias, N, C, OC, layout, stream());
}

void CudaModelOps::matmul_gelu_forward(void* pre_gelu, void* out, const void* inp, const void* weight,
                                       const void* bias, int N, int C, int OC, WeightLayout layout) {
  cuda::matmul_forward(*matmul_, dtype_, out, inp, weight, bias, N, C, OC, layout, stream(), pre_gelu);
}

void CudaModelOps::matmul_gelu_backward(void* dpre, void* dgelu, void* dweight, void* dbias, const void* dout,
                                        const void* gelu_out, const void* pre, const void* weight, int N, int C, int OC,
                                        WeightLayout layout, GradInto dpre_into) {
  cuda::matmul_backward_gelu(*matmul_, dtype_, dpre, dgelu, dweight, dbias, dout, gelu_out, pre, weight, N, C, OC,
                             layout, stream(), dpre_into);
}

void CudaModelOps::matmul_backward(void* dinp, void* dweight, void* dbias, const void* dout, const void* inp,
                                   const void* weight, int N, int C, int OC, WeightLayout layout, GradInto dinp_into) {
  cuda::matmul_backward(*matmul_, dtype_, dinp, dweight, dbias, dout, inp, weight, N, C, OC, layout, stream(),
                        dinp_into);
}

void CudaModelOps::matmul_fp32_forward(float* out, const void* inp, const float* weight, float* scratch, int N, int C,
                                       int OC, WeightLayout layout) {
  const void* x = inp;
  if (dtype_ != DType::F32) {
    cuda::cast(DType::F32, scratch, dtype_, inp, size_t(N) * size_t(C), stream());
    x = scratch;
  }
  cuda::matmul_forward(*matmul_, DType::F32, out, x, weight, nullptr, N, C, OC, layout, stream());
}

void CudaModelOps::matmul_fp32_backward(void* dinp, float* dweight, const float* dout, const void* inp,
                                        const float* weight, float* scratch, int N, int C, int OC, WeightLayout layout,
                                        GradInto dinp_into) {
  if (dtype_ == DType::F32) {
    cuda::matmul_backward(*matmul_, DType::F32, dinp, dweight, nullptr, dout, inp, weight, N, C, OC, layout, stream(),
                          dinp_into);
    return;
  }
  const size_t n = size_t(N) * size_t(C);
  if (dweight) {
    cuda::cast(DType::F32, scratch, dtype_, inp, n, stream());
    cuda::matmul_backward(*matmul_, DType::F32, nullptr, dweight, nullptr, dout, scratch, weight, N, C, OC, layout,
                          stream());
  }
  if (!dinp) return;
  // The input's gradient in fp32 over the cast input (no longer needed), then rounded once into dinp.
  cuda::matmul_backward(*matmul_, DType::F32, scratch, nullptr, nullptr, dout, nullptr, weight, N, C, OC, layout,
                        stream(), GradInto::Overwrite);
  if (dinp_into == GradInto::Accumulate)
    cuda::add_into(dtype_, dinp, DType::F32, scratch, n, stream());
  else
    cuda::cast(dtype_, dinp, DType::F32, scratch, n, stream());
}

// Forward saves the log-sum-exp of every (batch, head, query) row.
size_t CudaModelOps::attention_saved_floats(int B, int T, int NH) const { return size_t(B) * NH * T; }

size_t CudaModelOps::attention_scratch_floats(int B, int T, int NH) const {
  return attention_backward_scratch_floats(B, T, NH);
}

void CudaModelOps::attention_forward(void* out, float* saved, float*, const void* qkv, const TokenSegment* segments,
                                     int B, int T, int C, int NH) {
  cuda::attention_forward(dtype_, out, saved, qkv, B, T, C, NH, stream(), segments);
}

void CudaModelOps::attention_backward(void* dqkv, float* scratch, const void* dout, const void* qkv, const void* out,
                                      const float* saved, const TokenSegment* segments, int B, int T, int C, int NH,
                                      GradInto dqkv_into) {
  cuda::attention_backward(dtype_, dqkv, scratch, dout, qkv, out, saved, B, T, C, NH, stream(), dqkv_into, segments);
}

void CudaModelOps::rmsnorm_forward(void* out, float* rstd, const void* inp, const void* weight, int N, int C,
                                   float eps, float weight_offset) {
  cuda::rmsnorm_forward(dtype_, out, rstd, inp, weight, N, C, eps, stream(), weight_offset);
}

void CudaModelOps::residual_rmsnorm_forward(void* residual, void* out, float* rstd, const void* a, const void* b,
                                            const void* weight, int N, int C, float eps, float weight_offset) {
  cuda::residual_rmsnorm_forward(dtype_, residual, out, rstd, a, b, weight, N, C, eps, stream(), weight_offset);
}

void CudaModelOps::rmsnorm_backward(void* dinp, void* dweight, const void* dout, const void* inp, const void* weight,
                                    const float* rstd, int N, int C, GradInto dinp_into, float weight_offset) {
  float* partials = dweight ? norm_scratch(rmsnorm_backward_scratch_floats(N, C)) : nullptr;
  cuda::rmsnorm_backward(dtype_, dinp, dweight, partials, dout, inp, weight, rstd, N, C, stream(), dinp_into,
                         weight_offset);
}

void CudaModelOps::qk_norm_forward(void* out, float* rstd, const void* qkv, const void* q_weight,
                                   const void* k_weight, int N, int NH, int NKV, int hd, float eps,
                                   float weight_offset) {
  cuda::qk_norm_forward(dtype_, out, rstd, qkv, q_weight, k_weight, N, NH, NKV, hd, eps, stream(), weight_offset);
}

void CudaModelOps::qk_norm_backward(void* dqkv, void* dq_weight, void* dk_weight, const void* dout, const void* qkv,
                                    const void* q_weight, const void* k_weight, const float* rstd, int N, int NH,
                                    int NKV, int hd, GradInto dqkv_into, float weight_offset) {
  float* partials = dq_weight || dk_weight ? norm_scratch(qk_norm_backward_scratch_floats(N, hd)) : nullptr;
  cuda::qk_norm_backward(dtype_, dqkv, dq_weight, dk_weight, partials, dout, qkv, q_weight, k_weight, rstd, N, NH,
                         NKV, hd, stream(), dqkv_into, weight_offset);
}

void CudaModelOps::rope_forward(void* qkv, const float* cos, const float* sin, const TokenSegment* segments, int B,
                                int T, int NH, int NKV, int hd) {
  cuda::rope_forward(dtype_, qkv, cos, sin, B, T, NH, NKV, hd, stream(), segments);
}

void CudaModelOps::rope_backward(void* dqkv, const float* cos, const float* sin, const TokenSegment* segments, int B,
                                 int T, int NH, int NKV, int hd) {
  cuda::rope_backward(dtype_, dqkv, cos, sin, B, T, NH, NKV, hd, stream(), segments);
}

void CudaModelOps::gqa_attention_forward(void* out, float* saved, float*, const void* qkv,
                                         const TokenSegment* segments, int B, int T, int NH, int NKV, int hd,
                                         int window, AttentionScores scores) {
  cuda::attention_forward(dtype_, out, saved, qkv, AttentionShape{B, T, NH, NKV, hd, segments, window, scores},
                        stream());
}

void CudaModelOps::gqa_attention_backward(void* dqkv, float* scratch, const void* dout, const void* qkv,
                                          const void* out, const float* saved, const TokenSegment* segments, int B,
                                          int T, int NH, int NKV, int hd, int window, GradInto dqkv_into,
                                          AttentionScores scores) {
  cuda::attention_backward(dtype_, dqkv, scratch, dout, qkv, out, saved,
                           AttentionShape{B, T, NH, NKV, hd, segments, window, scores}, stream(), dqkv_into);
}

void CudaModelOps::swiglu_forward(void* out, const void* inp, int N, int F, Gate gate) {
  cuda::swiglu_forward(dtype_, out, inp, N, F, stream(), gate);
}

void CudaModelOps::swiglu_backward(void* dinp, const void* inp, const void* dout, int N, int F, GradInto dinp_into,
                                   Gate gate) {
  cuda::swiglu_backward(dtype_, dinp, inp, dout, N, F, stream(), dinp_into, gate);
}
void CudaModelOps::moe_route(float* probs, int32_t* experts, float* weights, const void* logits, int N, int E, int K,
                             bool normalize, bool fp32_logits) {
  cuda::moe_route(fp32_logits ? DType::F32 : dtype_, probs, experts, weights, logits, N, E, K, normalize, stream());
}

void CudaModelOps::moe_gather(void* rows, const void* x, const int32_t* token, int R, int C) {
  cuda::moe_gather(dtype_, rows, x, token, R, C, stream());
}

void CudaModelOps::moe_combine(void* out, const void* y, const float* weights, const int32_t* row, int N, int K,
                               int C) {
  cuda::moe_combine(dtype_, out, y, weights, row, N, K, C, stream());
}

void CudaModelOps::moe_combine_backward(void* dy, float* dweights, const void* dout, const void* y,
                                        const float* weights, const int32_t* row, int N, int K, int C) {
  cuda::moe_combine_backward(dtype_, dy, dweights, dout, y, weights, row, N, K, C, stream());
}

void CudaModelOps::moe_scatter(void* dx, const void* drows, const int32_t* row, int N, int K, int C,
                               GradInto dx_into) {
  cuda::moe_scatter(dtype_, dx, drows, row, N, K, C, dx_into, stream());
}

void CudaModelOps::moe_route_backward(void* dlogits, const float* dweights, const float* probs, const int32_t* experts,
                                      const float* daux, int N, int E, int K, bool normalize, bool fp32_logits) {
  cuda::moe_route_backward(fp32_logits ? DType::F32 : dtype_, dlogits, dweights, probs, experts, daux, N, E, K,
                           normalize, stream());
}

void CudaModelOps::moe_group(int32_t* offsets, int32_t* token, int32_t* row, const int32_t* experts, int N, int E,
                             int K) {
  cuda::moe_group(offsets, token, row, experts, N, E, K, stream());
}

void CudaModelOps::moe_expert_forward(void* out, const void* in, const void* weight, size_t stride,
                                      const int32_t* offsets, int E, int R, int C, int OC) {
  cuda::moe_expert_forward(dtype_, out, in, weight, stride, offsets, E, R, C, OC, stream());
}

void CudaModelOps::moe_expert_backward(void* dinp, void* dweight, const void* dout, const void* in,
                                       const void* weight, size_t stride, const int32_t* offsets, int E, int R, int C,
                                       int OC, GradInto dinp_into) {
  cuda::moe_expert_backward(dtype_, dinp, dweight, dout, in, weight, stride, offsets, E, R, C, OC, dinp_into, stream());
}

void CudaModelOps::moe_route_stats(double* stats, const float* probs, const int32_t* experts,
                                   const int32_t* padding_from, int T, int N, int E, int K) {
  cuda::moe_route_stats(stats, probs, experts, padding_from, T, N, E, K, stream());
}

void CudaModelOps::moe_aux_grad(float* daux, const double* stats, int L, int E, float scale) {
  cuda::moe_aux_grad(daux, stats, L, E, scale, stream());
}

void CudaModelOps::moe_aux_accumulate(double* acc, const double* stats, int L, int E) {
  cuda::moe_aux_accumulate(acc, stats, L, E, stream());
}

void CudaModelOps::moe_zero_padding(void* x, const int32_t* padding_from, int B, int T, int width) {
  cuda::moe_zero_padding(dtype_, x, padding_from, B, T, width, stream());
}

void CudaModelOps::moe_gate_add(void* out, const void* y, const void* gate, int N, int C) {
  cuda::moe_gate_add(dtype_, out, y, gate, N, C, stream());
}

void CudaModelOps::moe_gate_add_backward(void* dy, void* dgate, const void* dout, const void* y, const void* gate,
                                         int N, int C) {
  cuda::moe_gate_add_backward(dtype_, dy, dgate, dout, y, gate, N, C, stream());
}

void CudaModelOps::attention_cached_forward(void* out, void* k_cache, void* v_cache, const void* qkv, int B, int T,
                                            int pos, int S, int NH, int NKV, int hd, int window,
                                            AttentionScores scores) {
  cuda::attention_cached_forward(dtype_, out, k_cache, v_cache, qkv, B, T, pos, S, NH, NKV, hd, window, stream(),
                                 scores);
}

void CudaModelOps::gelu_forward(void* out, const void* inp, size_t n) {
  cuda::gelu_forward(dtype_, out, inp, n, stream());
}

void CudaModelOps::gelu_backward(void* dinp, const void* inp, const void* dout, size_t n, GradInto dinp_into) {
  cuda::gelu_backward(dtype_, dinp, inp, dout, n, stream(), dinp_into);
}

void CudaModelOps::residual_forward(void* out, const void* a, const void* b, size_t n) {
  cuda::residual_forward(dtype_, out, a, b, n, stream());
}

void CudaModelOps::softcap_forward(void* x, size_t n, float cap) {
  cuda::softcap_forward(dtype_, x, n, cap, stream());
}

void CudaModelOps::scale_columns(void* dst, int dst_ld, const void* src, int src_ld, int N, int width, float scale,
                                 GradInto into) {
  cuda::scale_columns(dtype_, dst, dst_ld, src, src_ld, N, width, scale, into, stream());
}

void CudaModelOps::dropout(void* out, const void* inp, size_t n, float p, uint64_t seed, GradInto into) {
  cuda::dropout(dtype_, out, inp, n, p, seed, into, stream());
}

void CudaModelOps::cross_entropy_forward(float* lse, float* losses, const void* logits, const int32_t* targets,
                                         int N, int V, int Vp) {
  classifier_losses(dtype_, lse, losses, logits, targets, N, V, Vp, stream());
}

float CudaModelOps::cross_entropy_loss(int32_t* counted, const float* losses, const int32_t* targets, int N) {
  classifier_mean(mean_loss_.data(), counted, losses, targets, N, stream());
  if (keep_losses_) {
    if (kept_weight_ != 0.0) add_mean_loss(loss_sum_.data(), mean_loss_.data(), kept_weight_, stream());
    return std::numeric_limits<float>::quiet_NaN();
  }
  ZT_CUDA_CHECK(cudaMemcpyAsync(mean_loss_host_.data(), mean_loss_.data(), sizeof(float), cudaMemcpyDeviceToHost,
                                stream()));
  ZT_CUDA_CHECK(cudaStreamSynchronize(stream()));
  return mean_loss_host_[0];
}

double CudaModelOps::take_losses() {
  take_losses_into(loss_sum_host_.data());
  ZT_CUDA_CHECK(cudaStreamSynchronize(stream()));
  return loss_sum_host_[0];
}

void CudaModelOps::take_losses_into(double* host) {
  ZT_CUDA_CHECK(cudaMemcpyAsync(host, loss_sum_.data(), sizeof(double), cudaMemcpyDeviceToHost, stream()));
  ZT_CUDA_CHECK(cudaMemsetAsync(loss_sum_.data(), 0, sizeof(double), stream()));
}

void CudaModelOps::cross_entropy_backward(void* dlogits, const void* logits, const float* lse,
                                          const int32_t* targets, const int32_t* counted, float dloss, int N, int V,
                                          int Vp, float softcap, const float* weights) {
  classifier_backward(dtype_, dlogits, logits, lse, targets, counted, dloss, N, V, Vp, stream(), softcap, weights);
}

void CudaModelOps::counted_rows(int32_t* rows, int32_t* row_targets, const int32_t* targets, int N) {
  cuda::counted_rows(rows, row_targets, targets, N, stream());
}

void CudaModelOps::scatter_rows(void* dx, const void* drows, const int32_t* rows, int M, int N, int C) {
  cuda::scatter_rows(dtype_, dx, drows, rows, M, N, C, stream());
}

}  // namespace zt::cuda
