// ModelOps on the CPU: the fp32 kernels of kernels/cpu over host memory.
#include "kernels/cpu/cpu_model_ops.hpp"

#include "kernels/cpu/adapter_ops.hpp"
#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/cpu/moe.hpp"

#include <cstring>
#include <limits>

namespace zt::cpu {

namespace {
const float* f(const void* p) { return static_cast<const float*>(p); }
float* f(void* p) { return static_cast<float*>(p); }

// The CPU kernels accumulate: an input gradient written over its buffer starts from zeros.
float* into(void* p, size_t n, GradInto how) {
  if (p && how == GradInto::Overwrite) std::memset(p, 0, n * sizeof(float));
  return f(p);
}
}  // namespace

void CpuModelOps::embedding_forward(void* out, const int32_t* tokens, const void* wte, const void* wpe,
                                    const TokenSegment* segments, int B, int T, int C) {
  cpu::embedding_forward(f(out), tokens, f(wte), f(wpe), B, T, C, segments);
}

void CpuModelOps::embedding_backward(void* dwte, void* dwpe, const void* dout, const int32_t* tokens,
                                     const TokenSegment* segments, int B, int T, int C) {
  cpu::embedding_backward(f(dwte), f(dwpe), f(dout), tokens, B, T, C, segments);
}

void CpuModelOps::layernorm_forward(void* out, float* mean, float* rstd, const void* inp, const void* weight,
                                    const void* bias, int N, int C) {
  cpu::layernorm_forward(f(out), mean, rstd, f(inp), f(weight), f(bias), N, C);
}

void CpuModelOps::layernorm_backward(void* dinp, void* dweight, void* dbias, const void* dout, const void* inp,
                                     const void* weight, const float* mean, const float* rstd, int N, int C,
                                     GradInto dinp_into) {
  cpu::layernorm_backward(into(dinp, size_t(N) * C, dinp_into), f(dweight), f(dbias), f(dout), f(inp), f(weight), mean,
                          rstd, N, C);
}

void CpuModelOps::matmul_forward(void* out, const void* inp, const void* weight, const void* bias, int N, int C,
                                 int OC, WeightLayout layout) {
  cpu::matmul_forward(f(out), f(inp), f(weight), f(bias), N, C, OC, layout);
}

void CpuModelOps::matmul_backward(void* dinp, void* dweight, void* dbias, const void* dout, const void* inp,
                                  const void* weight, int N, int C, int OC, WeightLayout layout, GradInto dinp_into) {
  cpu::matmul_backward(into(dinp, size_t(N) * C, dinp_into), f(dweight), f(dbias), f(dout), f(inp), f(weight), N, C,
                       OC, layout);
}

// Forward saves the log-sum-exp of every (batch, head, query) row.
size_t CpuModelOps::attention_saved_floats(int B, int T, int NH) const { return size_t(B) * NH * T; }
size_t CpuModelOps::attention_scratch_floats(int B, int T, int NH) const {
  return cpu::attention_scratch_floats(B, T, NH);
}

void CpuModelOps::attention_forward(void* out, float* saved, float* scratch, const void* qkv,
                                    const TokenSegment* segments, int B, int T, int C, int NH) {
  cpu::attention_forward(f(out), saved, scratch, f(qkv), B, T, C, NH, segments);
}

void CpuModelOps::attention_backward(void* dqkv, float* scratch, const void* dout, const void* qkv, const void* out,
                                     const float* saved, const TokenSegment* segments, int B, int T, int C, int NH,
                                     GradInto dqkv_into) {
  cpu::attention_backward(into(dqkv, size_t(B) * T * 3 * C, dqkv_into), scratch, f(dout), f(qkv), f(out), saved, B, T,
                          C, NH, segments);
}

void CpuModelOps::rmsnorm_forward(void* out, float* rstd, const void* inp, const void* weight, int N, int C,
                                  float eps, float weight_offset) {
  cpu::rmsnorm_forward(f(out), rstd, f(inp), f(weight), N, C, eps, weight_offset);
}

void CpuModelOps::rmsnorm_backward(void* dinp, void* dweight, const void* dout, const void* inp, const void* weight,
                                   const float* rstd, int N, int C, GradInto dinp_into, float weight_offset) {
  cpu::rmsnorm_backward(into(dinp, size_t(N) * C, dinp_into), f(dweight), f(dout), f(inp), f(weight), rstd, N, C,
                        weight_offset);
}

void CpuModelOps::qk_norm_forward(void* out, float* rstd, const void* qkv, const void* q_weight, const void* k_weight,
                                  int N, int NH, int NKV, int hd, float eps, float weight_offset) {
  cpu::qk_norm_forward(f(out), rstd, f(qkv), f(q_weight), f(k_weight), N, NH, NKV, hd, eps, weight_offset);
}

void CpuModelOps::qk_norm_backward(void* dqkv, void* dq_weight, void* dk_weight, const void* dout, const void* qkv,
                                   const void* q_weight, const void* k_weight, const float* rstd, int N, int NH,
                                   int NKV, int hd, GradInto dqkv_into, float weight_offset) {
  cpu::qk_norm_backward(into(dqkv, size_t(N) * (NH + 2 * NKV) * hd, dqkv_into), f(dq_weight), f(dk_weight), f(dout),
                        f(qkv), f(q_weight), f(k_weight), rstd, N, NH, NKV, hd, weight_offset);
}

void CpuModelOps::rope_forward(void* qkv, const float* cos, const float* sin, const TokenSegment* segments, int B,
                               int T, int NH, int NKV, int hd) {
  cpu::rope_forward(f(qkv), cos, sin, B, T, NH, NKV, hd, segments);
}

void CpuModelOps::rope_backward(void* dqkv, const float* cos, const float* sin, const TokenSegment* segments, int B,
                                int T, int NH, int NKV, int hd) {
  cpu::rope_backward(f(dqkv), cos, sin, B, T, NH, NKV, hd, segments);
}

void CpuModelOps::gqa_attention_forward(void* out, float* saved, float* scratch, const void* qkv,
                                        const TokenSegment* segments, int B, int T, int NH, int NKV, int hd,
                                        int window, AttentionScores scores) {
  cpu::gqa_attention_forward(f(out), saved, scratch, f(qkv), B, T, NH, NKV, hd, segments, window, scores);
}

void CpuModelOps::gqa_attention_backward(void* dqkv, float* scratch, const void* dout, const void* qkv,
                                         const void* out, const float* saved, const TokenSegment* segments, int B,
                                         int T, int NH, int NKV, int hd, int window, GradInto dqkv_into,
                                         AttentionScores scores) {
  cpu::gqa_attention_backward(into(dqkv, size_t(B) * T * (NH + 2 * NKV) * hd, dqkv_into), scratch, f(dout), f(qkv),
                              f(out), saved, B, T, NH, NKV, hd, segments, window, scores);
}

void CpuModelOps::attention_cached_forward(void* out, void* k_cache, void* v_cache, const void* qkv, int B, int T,
                                           int pos, int S, int NH, int NKV, int hd, int window,
                                           AttentionScores scores) {
  cpu::gqa_attention_cached_forward(f(out), f(k_cache), f(v_cache), f(qkv), B, T, pos, S, NH, NKV, hd, window, scores);
}

void CpuModelOps::swiglu_forward(void* out, const void* inp, int N, int F, Gate gate) {
  cpu::swiglu_forward(f(out), f(inp), N, F, gate);
}

void CpuModelOps::moe_route(float* probs, int32_t* experts, float* weights, const void* logits, int N, int E, int K,
                            bool normalize, bool) {  // fp32 logits either way
  cpu::moe_route(probs, experts, weights, f(logits), N, E, K, normalize);
}

void CpuModelOps::moe_gather(void* rows, const void* x, const int32_t* token, int R, int C) {
  cpu::moe_gather(f(rows), f(x), token, R, C);
}

void CpuModelOps::moe_combine(void* out, const void* y, const float* weights, const int32_t* row, int N, int K,
                              int C) {
  cpu::moe_combine(f(out), f(y), weights, row, N, K, C);
}

void CpuModelOps::moe_combine_backward(void* dy, float* dweights, const void* dout, const void* y,
                                       const float* weights, const int32_t* row, int N, int K, int C) {
  cpu::moe_combine_backward(f(dy), dweights, f(dout), f(y), weights, row, N, K, C);
}

void CpuModelOps::moe_scatter(void* dx, const void* drows, const int32_t* row, int N, int K, int C,
                              GradInto dx_into) {
  cpu::moe_scatter(f(dx), f(drows), row, N, K, C, dx_into == GradInto::Accumulate);
}

void CpuModelOps::moe_route_backward(void* dlogits, const float* dweights, const float* probs, const int32_t* experts,
                                     const float* daux, int N, int E, int K, bool normalize, bool) {
  cpu::moe_route_backward(f(dlogits), dweights, probs, experts, daux, N, E, K, normalize);
}

void CpuModelOps::moe_group(int32_t* offsets, int32_t* token, int32_t* row, const int32_t* experts, int N, int E,
                            int K) {
  cpu::moe_group(offsets, token, row, experts, N, E, K);
}

// One GEMM per expert over its rows (the offsets are host memory here).
void CpuModelOps::moe_expert_forward(void* out, const void* in, const void* weight, size_t stride,
                                     const int32_t* offsets, int E, int, int C, int OC) {
  for (int e = 0; e < E; ++e) {
    const int first = offsets[e], n = offsets[e + 1] - first;
    if (n == 0) continue;
    matmul_forward(f(out) + size_t(first) * OC, f(in) + size_t(first) * C, f(weight) + size_t(e) * stride, nullptr,
                   n, C, OC, WeightLayout::OutputMajor);
  }
}

void CpuModelOps::moe_expert_backward(void* dinp, void* dweight, const void* dout, const void* in, const void* weight,
                                      size_t stride, const int32_t* offsets, int E, int, int C, int OC,
                                      GradInto dinp_into) {
  for (int e = 0; e < E; ++e) {
    const int first = offsets[e], n = offsets[e + 1] - first;
    if (n == 0) continue;
    matmul_backward(dinp ? f(dinp) + size_t(first) * C : nullptr, dweight ? f(dweight) + size_t(e) * stride : nullptr,
                    nullptr, f(dout) + size_t(first) * OC, f(in) + size_t(first) * C, f(weight) + size_t(e) * stride,
                    n, C, OC, WeightLayout::OutputMajor, dinp_into);
  }
}

void CpuModelOps::moe_route_stats(double* stats, const float* probs, const int32_t* experts,
                                  const int32_t* padding_from, int T, int N, int E, int K) {
  cpu::moe_route_stats(stats, probs, experts, padding_from, T, N, E, K);
}

void CpuModelOps::moe_aux_grad(float* daux, const double* stats, int L, int E, float scale) {
  cpu::moe_aux_grad(daux, stats, L, E, scale);
}

void CpuModelOps::moe_aux_accumulate(double* acc, const double* stats, int L, int E) {
  cpu::moe_aux_accumulate(acc, stats, L, E);
}

void CpuModelOps::moe_zero_padding(void* x, const int32_t* padding_from, int B, int T, int width) {
  cpu::moe_zero_padding(f(x), padding_from, B, T, width);
}

void CpuModelOps::moe_gate_add(void* out, const void* y, const void* gate, int N, int C) {
  cpu::moe_gate_add(f(out), f(y), f(gate), N, C);
}

void CpuModelOps::moe_gate_add_backward(void* dy, void* dgate, const void* dout, const void* y, const void* gate,
                                        int N, int C) {
  cpu::moe_gate_add_backward(f(dy), f(dgate), f(dout), f(y), f(gate), N, C);
}

void CpuModelOps::swiglu_backward(void* dinp, const void* inp, const void* dout, int N, int F, GradInto dinp_into,
                                  Gate gate) {
  cpu::swiglu_backward(into(dinp, size_t(N) * 2 * F, dinp_into), f(inp), f(dout), N, F, gate);
}

void CpuModelOps::gelu_forward(void* out, const void* inp, size_t n) { cpu::gelu_forward(f(out), f(inp), n); }

void CpuModelOps::gelu_backward(void* dinp, const void* inp, const void* dout, size_t n, GradInto dinp_into) {
  cpu::gelu_backward(into(dinp, n, dinp_into), f(inp), f(dout), n);
}

void CpuModelOps::residual_forward(void* out, const void* a, const void* b, size_t n) {
  cpu::residual_forward(f(out), f(a), f(b), n);
}

void CpuModelOps::softcap_forward(void* x, size_t n, float cap) { cpu::softcap_forward(f(x), n, cap); }

void CpuModelOps::scale_columns(void* dst, int dst_ld, const void* src, int src_ld, int N, int width, float scale,
                                GradInto into) {
  cpu::scale_columns(f(dst), dst_ld, f(src), src_ld, N, width, scale, into == GradInto::Accumulate);
}

void CpuModelOps::dropout(void* out, const void* inp, size_t n, float p, uint64_t seed, GradInto into) {
  cpu::dropout(f(out), f(inp), n, p, seed, into == GradInto::Accumulate);
}

void CpuModelOps::cross_entropy_forward(float* lse, float* losses, const void* logits, const int32_t* targets,
                                        int N, int V, int Vp) {
  cpu::cross_entropy_losses(lse, losses, f(logits), targets, N, V, Vp);
}

float CpuModelOps::cross_entropy_loss(int32_t* counted, const float* losses, const int32_t* targets, int N) {
  int rows = 0;
  const float loss = cpu::mean_loss(losses, targets, N, &rows);
  counted[0] = rows;
  if (!keep_losses_) return loss;
  if (kept_weight_ != 0.0) kept_ += double(loss) * kept_weight_;
  return std::numeric_limits<float>::quiet_NaN();
}

double CpuModelOps::take_losses() {
  const double sum = kept_;
  kept_ = 0.0;
  return sum;
}

void CpuModelOps::cross_entropy_backward(void* dlogits, const void* logits, const float* lse, const int32_t* targets,
                                         const int32_t* counted, float dloss, int N, int V, int Vp, float softcap,
                                         const float* weights) {
  const float scale = weights ? dloss : counted[0] > 0 ? dloss / float(counted[0]) : 0.0f;
  cpu::cross_entropy_backward(f(dlogits), f(logits), lse, targets, scale, N, V, Vp, softcap, weights);
}

void CpuModelOps::counted_rows(int32_t* rows, int32_t* row_targets, const int32_t* targets, int N) {
  cpu::counted_rows(rows, row_targets, targets, N);
}

void CpuModelOps::scatter_rows(void* dx, const void* drows, const int32_t* rows, int M, int N, int C) {
  cpu::scatter_rows(f(dx), f(drows), rows, M, N, C);
}

}  // namespace zt::cpu
