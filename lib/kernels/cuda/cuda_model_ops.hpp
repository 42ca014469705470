#pragma once
// The model's operator table (kernels/model_ops.hpp) on one GPU: the launchers of kernels/cuda on
// the device's compute stream, in fp32 or bf16 (the training dtype; the kernels have no fp16
// activations). Differences from the CPU table that the interface was made for:
// - attention is one fused kernel per pass (kernels/cuda/cuda_attention.hpp): forward needs no
//   scratch, backward only one float per query row;
// - cross_entropy_loss copies the mean loss to the host and waits for the stream, unless the losses
//   are kept on the device; cross_entropy_backward's kernel reads the count of rows that count
//   from device memory, so a replayed graph scales by its own micro-batch's count;
// - the MLP's GELU runs in the input projection's epilogue in bf16, its gradient in the output
//   projection's backward epilogue, and a block's second residual in its norm's pass (LayerNorm or
//   RMSNorm); input gradients are written over (GradInto) with cuBLASLt's beta = 0 or kernels that
//   skip the read;
// - the llama family's grouped-query attention is the same fused kernel (query head h reads
//   key/value head h / (NH / NKV) in place: nothing is repeated in memory); RoPE and the q/k norms
//   are passes of their own over the q and k heads (kernels/cuda/cuda_rope.hpp says why).
// The operators' own scratch (cuBLASLt workspace, the norms' column partials, the embedding
// backward's sort workspace) is allocated once for the largest shape seen, so only the first step
// allocates; it counts as activations in the memory ledger.
#include <memory>

#include "core/buffer.hpp"
#include "kernels/cuda/cuda_device.hpp"
#include "kernels/cuda/cuda_matmul.hpp"
#include "kernels/model_ops.hpp"

namespace zt::cuda {

class CudaModelOps final : public ModelOps {
public:
  // dtype: fp32 or bf16 (anything else throws).
  CudaModelOps(CudaDevice& device, DType dtype);
  ~CudaModelOps() override;

  DType dtype() const override { return dtype_; }
  size_t own_bytes(int B, int T, int C) const override;
  void embedding_forward(void* out, const int32_t* tokens, const void* wte, const void* wpe,
                         const TokenSegment* segments, int B, int T, int C) override;
  void embedding_backward(void* dwte, void* dwpe, const void* dout, const int32_t* tokens,
                          const TokenSegment* segments, int B, int T, int C) override;
  void layernorm_forward(void* out, float* mean, float* rstd, const void* inp, const void* weight, const void* bias,
                         int N, int C) override;
  void layernorm_backward(void* dinp, void* dweight, void* dbias, const void* dout, const void* inp,
                          const void* weight, const float* mean, const float* rstd, int N, int C,
                          GradInto dinp_into) override;
  void residual_layernorm_forward(void* residual, void* out, float* mean, float* rstd, const void* a, const void* b,
                                  const void* weight, const void* bias, int N, int C) override;
  void matmul_forward(void* out, const void* inp, const void* weight, const void* bias, int N, int C, int OC,
                      WeightLayout layout) override;
  void matmul_gelu_forward(void* pre_gelu, void* out, const void* inp, const void* weight, const void* bias, int N,
                           int C, int OC, WeightLayout layout) override;
  void matmul_backward(void* dinp, void* dweight, void* dbias, const void* dout, const void* inp, const void* weight,
                       int N, int C, int OC, WeightLayout layout, GradInto dinp_into) override;
  void matmul_fp32_forward(float* out, const void* inp, const float* weight, float* scratch, int N, int C, int OC,
                           WeightLayout layout) override;
  void matmul_fp32_backward(void* dinp, float* dweight, const float* dout, const void* inp, const float* weight,
                            float* scratch, int N, int C, int OC, WeightLayout layout, GradInto dinp_into) override;
  void matmul_gelu_backward(void* dpre, void* dgelu, void* dweight, void* dbias, const void* dout, const void* gelu_out,
                            const void* pre, const void* weight, int N, int C, int OC, WeightLayout layout,
                            GradInto dpre_into) override;
  size_t attention_saved_floats(int B, int T, int NH) const override;
  size_t attention_scratch_floats(int B, int T, int NH) const override;
  void attention_forward(void* out, float* saved, float* scratch, const void* qkv, const TokenSegment* segments,
                         int B, int T, int C, int NH) override;
  void attention_backward(void* dqkv, float* scratch, const void* dout, const void* qkv, const void* out,
                          const float* saved, const TokenSegment* segments, int B, int T, int C, int NH,
                          GradInto dqkv_into) override;
  void rmsnorm_forward(void* out, float* rstd, const void* inp, const void* weight, int N, int C, float eps,
                       float weight_offset = 0.0f) override;
  void residual_rmsnorm_forward(void* residual, void* out, float* rstd, const void* a, const void* b,
                                const void* weight, int N, int C, float eps, float weight_offset = 0.0f) override;
  void rmsnorm_backward(void* dinp, void* dweight, const void* dout, const void* inp, const void* weight,
                        const float* rstd, int N, int C, GradInto dinp_into, float weight_offset = 0.0f) override;
  void qk_norm_forward(void* out, float* rstd, const void* qkv, const void* q_weight, const void* k_weight, int N,
                       int NH, int NKV, int hd, float eps, float weight_offset = 0.0f) override;
  void qk_norm_backward(void* dqkv, void* dq_weight, void* dk_weight, const void* dout, const void* qkv,
                        const void* q_weight, const void* k_weight, const float* rstd, int N, int NH, int NKV,
                        int hd, GradInto dqkv_into, float weight_offset = 0.0f) override;
  void rope_forward(void* qkv, const float* cos, const float* sin, const TokenSegment* segments, int B, int T, int NH,
                    int NKV, int hd) override;
  void rope_backward(void* dqkv, const float* cos, const float* sin, const TokenSegment* segments, int B, int T,
                     int NH, int NKV, int hd) override;
  void gqa_attention_forward(void* out, float* saved, float* scratch, const void* qkv, const TokenSegment* segments,
                             int B, int T, int NH, int NKV, int hd, int window, AttentionScores scores = {}) override;
  void gqa_attention_backward(void* dqkv, float* scratch, const void* dout, const void* qkv, const void* out,
                              const float* saved, const TokenSegment* segments, int B, int T, int NH, int NKV, int hd,
                              int window, GradInto dqkv_into, AttentionScores scores = {}) override;
  void attention_cached_forward(void* out, void* k_cache, void* v_cache, const void* qkv, int B, int T, int pos, int S,
                                int NH, int NKV, int hd, int window, AttentionScores scores = {}) override;
  void swiglu_forward(void* out, const void* inp, int N, int F, Gate gate = Gate::Silu) override;
  void swiglu_backward(void* dinp, const void* inp, const void* dout, int N, int F, GradInto dinp_into,
                       Gate gate = Gate::Silu) override;
  void moe_route(float* probs, int32_t* experts, float* weights, const void* logits, int N, int E, int K,
                 bool normalize, bool fp32_logits) override;
  void moe_gather(void* rows, const void* x, const int32_t* token, int R, int C) override;
  void moe_combine(void* out, const void* y, const float* weights, const int32_t* row, int N, int K, int C) override;
  void moe_combine_backward(void* dy, float* dweights, const void* dout, const void* y, const float* weights,
                            const int32_t* row, int N, int K, int C) override;
  void moe_scatter(void* dx, const void* drows, const int32_t* row, int N, int K, int C, GradInto dx_into) override;
  void moe_route_backward(void* dlogits, const float* dweights, const float* probs, const int32_t* experts,
                          const float* daux, int N, int E, int K, bool normalize, bool fp32_logits) override;
  void moe_group(int32_t* offsets, int32_t* token, int32_t* row, const int32_t* experts, int N, int E, int K) override;
  void moe_expert_forward(void* out, const void* in, const void* weight, size_t stride, const int32_t* offsets, int E,
                          int R, int C, int OC) override;
  void moe_expert_backward(void* dinp, void* dweight, const void* dout, const void* in, const void* weight,
                           size_t stride, const int32_t* offsets, int E, int R, int C, int OC,
                           GradInto dinp_into) override;
  void moe_route_stats(double* stats, const float* probs, const int32_t* experts, const int32_t* padding_from, int T,
                       int N, int E, int K) override;
  void moe_aux_grad(float* daux, const double* stats, int L, int E, float scale) override;
  void moe_aux_accumulate(double* acc, const double* stats, int L, int E) override;
  void moe_zero_padding(void* x, const int32_t* padding_from, int B, int T, int width) override;
  void moe_gate_add(void* out, const void* y, const void* gate, int N, int C) override;
  void moe_gate_add_backward(void* dy, void* dgate, const void* dout, const void* y, const void* gate, int N,
                             int C) override;
  void gelu_forward(void* out, const void* inp, size_t n) override;
  void gelu_backward(void* dinp, const void* inp, const void* dout, size_t n, GradInto dinp_into) override;
  void residual_forward(void* out, const void* a, const void* b, size_t n) override;
  void softcap_forward(void* x, size_t n, float cap) override;
  void scale_columns(void* dst, int dst_ld, const void* src, int src_ld, int N, int width, float scale,
                     GradInto into) override;
  void dropout(void* out, const void* inp, size_t n, float p, uint64_t seed, GradInto into) override;
  void cross_entropy_forward(float* lse, float* losses, const void* logits, const int32_t* targets, int N, int V,
                             int Vp) override;
  float cross_entropy_loss(int32_t* counted, const float* losses, const int32_t* targets, int N) override;
  void cross_entropy_backward(void* dlogits, const void* logits, const float* lse, const int32_t* targets,
                              const int32_t* counted, float dloss, int N, int V, int Vp, float softcap = 0.0f,
                              const float* weights = nullptr) override;
  void counted_rows(int32_t* rows, int32_t* row_targets, const int32_t* targets, int N) override;
  void scatter_rows(void* dx, const void* drows, const int32_t* rows, int M, int N, int C) override;
  void keep_losses(bool keep) override { keep_losses_ = keep; }
  void kept_loss_weight(double weight) override { kept_weight_ = weight; }
  double take_losses() override;
  void take_losses_into(double* host) override;

private:
  cudaStream_t stream() const { return device_.compute_stream(); }
  // A device buffer of at least `bytes` (grown, never shrunk; contents not kept).
  void* scratch(Buffer<uint8_t>& buffer, size_t bytes);
  // The column partials of a norm's weight gradients (LayerNorm, RMSNorm, the q/k norms).
  float* norm_scratch(size_t floats);

  CudaDevice& device_;
  DType dtype_;
  std::unique_ptr<MatmulContext> matmul_;
  Buffer<uint8_t> norm_scratch_, embedding_workspace_;
  Buffer<float> mean_loss_, mean_loss_host_;  // one float on the device, one in pinned memory
  bool keep_losses_ = false;
  double kept_weight_ = 1.0;
  Buffer<double> loss_sum_, loss_sum_host_;    // the kept losses' sum, on the device and pinned
};

}  // namespace zt::cuda
