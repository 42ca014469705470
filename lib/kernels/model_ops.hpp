#pragma once
// The operator table of the model (docs/architecture.md, "Device seams"): what it computes with, forward and
// backward, on one device, for every family (GPT-2's LayerNorm, learned positions and GELU; the
// llama family's RMSNorm, rotary embeddings, SwiGLU and grouped-query attention). kernels/cpu
// implements it over host memory in fp32, kernels/cuda on a GPU. The model calls nothing else.
//
// Conventions (llm.c's): B batch, T time, C channels, NH heads, N = B·T rows, OC output channels,
// V vocabulary, Vp padded vocabulary (rows of logits are Vp wide; columns from V on are padding);
// grouped-query attention: NKV key/value heads (dividing NH), hd the width of a head, and the
// packed projection qkv [B, T, (NH + 2·NKV)·hd] holding per token the NH q heads, then the NKV k
// heads, then the NKV v heads.
// `void*` tensors hold elements of dtype() in the device's memory; `float*` ones are always fp32
// (normalisation statistics, log-sum-exp, what attention saves for backward); tokens and counts
// are int32 in device memory.
// Packed rows: `segments` [B, T] in device memory (core/token_segment.hpp) gives each token's
// sample within its row, for the operators that mix positions (attention: a query sees the keys of
// its own sample only; the position embeddings and rotations: a token's position is t - begin of
// its sample). Null: every row is one sample. Backward functions accumulate (+=) into their parameter-gradient
// outputs, and into their input-gradient outputs as their GradInto says; a gradient output may be
// null to skip it.
// All work is queued on the device's compute stream.
#include <cstddef>
#include <cstdint>

#include "core/dtype.hpp"
#include "core/token_segment.hpp"
#include "kernels/weight_layout.hpp"

namespace zt {

// How a backward operator writes an input gradient: added into the buffer (+=), or written over
// it (=, its old contents ignored: the caller is the first writer and saves clearing it).
enum class GradInto : uint8_t { Accumulate, Overwrite };

// How attention turns q·k into scores: s = scale · q·k (scale 0: 1/sqrt(hd)), then with softcap > 0
// s = softcap · tanh(s / softcap) before the mask and the softmax (Gemma 2's attn_logit_softcapping).
struct AttentionScores {
  float scale = 0.0f;
  float softcap = 0.0f;
};

// The gate's activation of a gated MLP: SiLU (SwiGLU) or GELU's tanh form (GeGLU).
enum class Gate : uint8_t { Silu, GeluTanh };

class ModelOps {
public:
  virtual ~ModelOps() = default;
  // The dtype of activations, parameters and gradients the model computes with.
  virtual DType dtype() const = 0;
  // Bytes the operators hold themselves once they have run on micro-batches of B x T tokens of
  // width C (workspaces, per-row scratch), counted as activations: the memory plan adds them.
  virtual size_t own_bytes(int B, int T, int C) const = 0;

  // out[b, t] = wte[tokens[b, t]] + wpe[p], p the token's position (t, or t - begin of its
  // sample); wpe may be null (no learned positions).
  virtual void embedding_forward(void* out, const int32_t* tokens, const void* wte, const void* wpe,
                                 const TokenSegment* segments, int B, int T, int C) = 0;
  // dwte[tokens[b, t]] += dout[b, t], dwpe[p] += dout[b, t]
  virtual void embedding_backward(void* dwte, void* dwpe, const void* dout, const int32_t* tokens,
                                  const TokenSegment* segments, int B, int T, int C) = 0;

  // out[N, C] = (inp - mean) · rstd · weight + bias (eps 1e-5); saves mean[N] and rstd[N].
  virtual void layernorm_forward(void* out, float* mean, float* rstd, const void* inp, const void* weight,
                                 const void* bias, int N, int C) = 0;
  virtual void layernorm_backward(void* dinp, void* dweight, void* dbias, const void* dout, const void* inp,
                                  const void* weight, const float* mean, const float* rstd, int N, int C,
                                  GradInto dinp_into) = 0;
  // residual = a + b, then out = layernorm(residual) as layernorm_forward computes it (a block's
  // second residual and its LayerNorm; a backend may do both in one pass).
  virtual void residual_layernorm_forward(void* residual, void* out, float* mean, float* rstd, const void* a,
                                          const void* b, const void* weight, const void* bias, int N, int C) {
    residual_forward(residual, a, b, size_t(N) * size_t(C));
    layernorm_forward(out, mean, rstd, residual, weight, bias, N, C);
  }

  // out[N, OC] = inp[N, C] · W (+ bias[OC]); overwrites out.
  virtual void matmul_forward(void* out, const void* inp, const void* weight, const void* bias, int N, int C, int OC,
                              WeightLayout layout) = 0;
  // pre_gelu = inp · W + bias, out = gelu(pre_gelu) (the MLP's input projection; a backend may
  // apply the GELU in the product's epilogue).
  virtual void matmul_gelu_forward(void* pre_gelu, void* out, const void* inp, const void* weight, const void* bias,
                                   int N, int C, int OC, WeightLayout layout) {
    matmul_forward(pre_gelu, inp, weight, bias, N, C, OC, layout);
    gelu_forward(out, pre_gelu, size_t(N) * size_t(OC));
  }
  // dinp (+)= dout · Wᵀ, dweight += inpᵀ · dout (in the weight's own layout), dbias += Σ_rows dout.
  virtual void matmul_backward(void* dinp, void* dweight, void* dbias, const void* dout, const void* inp,
                               const void* weight, int N, int C, int OC, WeightLayout layout, GradInto dinp_into) = 0;

  // A projection whose weight is kept in fp32 (data_types.keep_in_fp32_modules: a router) under a
  // 16-bit dtype(), all in fp32 as PyTorch computes F.linear(inp.float(), W): out [N, OC] (fp32,
  // written over) = fp32(inp [N, C]) · W (fp32). Backward: dweight (fp32) += fp32(inp)ᵀ · dout
  // (fp32), dinp (dtype()) (+)= dout · Wᵀ, the product in fp32 rounded once. scratch: [N, C] fp32
  // (the input's cast; unused when dtype() is fp32, where these are matmul_forward/backward).
  virtual void matmul_fp32_forward(float* out, const void* inp, const float* weight, float* scratch, int N, int C,
                                   int OC, WeightLayout layout);
  virtual void matmul_fp32_backward(void* dinp, float* dweight, const float* dout, const void* inp, const float* weight,
                                    float* scratch, int N, int C, int OC, WeightLayout layout, GradInto dinp_into);

  // The backward of a projection whose input was gelu(pre) (the MLP's output projection), through
  // the GELU: dpre (+)= gelu'(pre) · (dout · Wᵀ), dweight += gelu_outᵀ · dout, dbias += Σ_rows dout.
  // dgelu: [N, C] scratch for dout · Wᵀ (a backend may apply the GELU's gradient in the product's
  // epilogue instead).
  virtual void matmul_gelu_backward(void* dpre, void* dgelu, void* dweight, void* dbias, const void* dout,
                                    const void* gelu_out, const void* pre, const void* weight, int N, int C, int OC,
                                    WeightLayout layout, GradInto dpre_into) {
    matmul_backward(dgelu, dweight, dbias, dout, gelu_out, weight, N, C, OC, layout, GradInto::Overwrite);
    gelu_backward(dpre, pre, dgelu, size_t(N) * size_t(C), dpre_into);
  }

  // Causal multi-head attention over packed qkv [B, T, 3C] (q, k, v per token; head h uses channels
  // [h·hs, (h+1)·hs)) into out [B, T, C]; with segments, causal inside each sample: query t attends
  // to keys [begin, t] of its sample. Flash-attention style on every backend: `saved` holds
  // what backward needs besides qkv and out, the log-sum-exp of each query row (fp32 elements:
  // attention_saved_floats), and backward recomputes the probabilities from it. `scratch` is what
  // forward and backward use while they run (attention_scratch_floats; one buffer may serve every
  // block).
  virtual size_t attention_saved_floats(int B, int T, int NH) const = 0;
  virtual size_t attention_scratch_floats(int B, int T, int NH) const = 0;
  virtual void attention_forward(void* out, float* saved, float* scratch, const void* qkv,
                                 const TokenSegment* segments, int B, int T, int C, int NH) = 0;
  virtual void attention_backward(void* dqkv, float* scratch, const void* dout, const void* qkv, const void* out,
                                  const float* saved, const TokenSegment* segments, int B, int T, int C, int NH,
                                  GradInto dqkv_into) = 0;

  // RMSNorm: out[N, C] = inp · rstd · (weight_offset + weight), rstd = 1 / sqrt(mean(inp²) + eps)
  // saved in rstd[N], computed in fp32 and rounded once (weight_offset 1: Gemma's (1 + w) norms).
  virtual void rmsnorm_forward(void* out, float* rstd, const void* inp, const void* weight, int N, int C, float eps,
                               float weight_offset = 0.0f) = 0;
  virtual void rmsnorm_backward(void* dinp, void* dweight, const void* dout, const void* inp, const void* weight,
                                const float* rstd, int N, int C, GradInto dinp_into, float weight_offset = 0.0f) = 0;
  // residual = a + b, then out = rmsnorm(residual) as rmsnorm_forward computes it (a llama block's
  // second residual and its norm; a backend may do both in one pass).
  virtual void residual_rmsnorm_forward(void* residual, void* out, float* rstd, const void* a, const void* b,
                                        const void* weight, int N, int C, float eps, float weight_offset = 0.0f) {
    residual_forward(residual, a, b, size_t(N) * size_t(C));
    rmsnorm_forward(out, rstd, residual, weight, N, C, eps, weight_offset);
  }
  // RMSNorm of each head of the packed qkv [N, (NH + 2·NKV)·hd] (Qwen3's q_norm and k_norm): out
  // holds the q heads normalised with q_weight[hd], the k heads with k_weight[hd], the v heads
  // copied; rstd[N, NH + NKV] per q and k head. Backward passes the v heads' gradient through.
  virtual void qk_norm_forward(void* out, float* rstd, const void* qkv, const void* q_weight, const void* k_weight,
                               int N, int NH, int NKV, int hd, float eps, float weight_offset = 0.0f) = 0;
  virtual void qk_norm_backward(void* dqkv, void* dq_weight, void* dk_weight, const void* dout, const void* qkv,
                                const void* q_weight, const void* k_weight, const float* rstd, int N, int NH,
                                int NKV, int hd, GradInto dqkv_into, float weight_offset = 0.0f) = 0;

  // Rotary embeddings in place on the q and k heads of the packed qkv [B, T, (NH + 2·NKV)·hd],
  // Hugging Face's rotate-half convention: with i < hd/2, c = cos[p, i], s = sin[p, i] (p the
  // token's position: t, or t - begin of its sample),
  //   x'[i] = x[i]·c - x[i + hd/2]·s,   x'[i + hd/2] = x[i + hd/2]·c + x[i]·s.
  // cos and sin are fp32 tables [T, hd/2] (rows beyond T unused). Backward rotates the gradient of
  // q and k back (the transpose), in place; v is untouched both ways.
  virtual void rope_forward(void* qkv, const float* cos, const float* sin, const TokenSegment* segments, int B, int T,
                            int NH, int NKV, int hd) = 0;
  virtual void rope_backward(void* dqkv, const float* cos, const float* sin, const TokenSegment* segments, int B,
                             int T, int NH, int NKV, int hd) = 0;

  // Causal grouped-query attention over the packed qkv: q head h attends with k and v head
  // h / (NH / NKV); out [B, T, NH·hd]; scale 1/sqrt(hd). `saved` and `scratch` as above (sized by
  // NH); segments as above. NKV = NH and hd = C / NH is the attention above. window > 0: sliding-
  // window attention, query t attends to the keys (t - window, t] of its sample only, and the work
  // for keys outside that band is skipped. scores: their scale and soft-capping (the default: 1/sqrt(hd),
  // none).
  virtual void gqa_attention_forward(void* out, float* saved, float* scratch, const void* qkv,
                                     const TokenSegment* segments, int B, int T, int NH, int NKV, int hd, int window,
                                     AttentionScores scores = {}) = 0;
  virtual void gqa_attention_backward(void* dqkv, float* scratch, const void* dout, const void* qkv, const void* out,
                                      const float* saved, const TokenSegment* segments, int B, int T, int NH, int NKV,
                                      int hd, int window, GradInto dqkv_into, AttentionScores scores = {}) = 0;

  // Attention of new positions against a key/value cache (generation, forward only). qkv
  // [B, T, (NH + 2·NKV)·hd] is the packed projection (rotated, for rotary families) of T new
  // tokens per sequence at positions [pos, pos + T). k_cache and v_cache [B, S, NKV·hd] are rings
  // of S rows per sequence, position p at row p % S. Query t attends, as gqa_attention_forward, to
  // positions [0, pos + t] (each sequence one sample; with a window > 0, the last `window` of
  // them), the earlier ones read from the rings and the new ones from qkv; then the new tokens' k
  // and v heads are written into their rows. out [B, T, NH·hd]. The rings hold the past the
  // queries read: S >= pos, or S >= min(pos, window - 1) with a window (a full layer's S >= pos + T
  // keeps every position; a sliding layer's S = window keeps its last window). GPT-2's attention is
  // NKV = NH, hd = C / NH.
  virtual void attention_cached_forward(void* out, void* k_cache, void* v_cache, const void* qkv, int B, int T,
                                        int pos, int S, int NH, int NKV, int hd, int window,
                                        AttentionScores scores = {}) = 0;

  // SwiGLU over the packed gate and up projections: inp [N, 2F] holds gate [N, F] then up [N, F]
  // in each row; out[N, F] = silu(gate) · up, silu(x) = x / (1 + exp(-x)); dinp (+)= its gradient.
  // gate GeluTanh: gelu(gate) · up (GeGLU, GELU's tanh form).
  virtual void swiglu_forward(void* out, const void* inp, int N, int F, Gate gate = Gate::Silu) = 0;
  virtual void swiglu_backward(void* dinp, const void* inp, const void* dout, int N, int F, GradInto dinp_into,
                               Gate gate = Gate::Silu) = 0;

  // GPT-2's tanh GELU: out = gelu(inp); dinp (+)= gelu'(inp) · dout.
  virtual void gelu_forward(void* out, const void* inp, size_t n) = 0;
  virtual void gelu_backward(void* dinp, const void* inp, const void* dout, size_t n, GradInto dinp_into) = 0;
  // out = a + b
  virtual void residual_forward(void* out, const void* a, const void* b, size_t n) = 0;
  // Soft-capping in place: x = cap · tanh(x / cap) (Gemma's final_logit_softcapping on the logits; cap > 0).
  virtual void softcap_forward(void* x, size_t n, float cap) = 0;

  // A block of columns of row-major matrices: dst[n, j] (+)= scale · src[n, j] for n < N, j < width,
  // rows of dst dst_ld elements apart, of src src_ld (LoRA's update added to its slice of a packed
  // projection's output, and that slice's gradient taken back out).
  virtual void scale_columns(void* dst, int dst_ld, const void* src, int src_ld, int N, int width, float scale,
                             GradInto into) = 0;
  // Inverted dropout: out[i] (+)= inp[i] / (1 - p) where dropout_keeps(seed, i, dropout_threshold(p))
  // (kernels/dropout_mask.hpp), else 0 (+ nothing). The mask depends on (seed, i) alone: backward
  // passes the gradient through the same mask by calling it again with the same seed.
  virtual void dropout(void* out, const void* inp, size_t n, float p, uint64_t seed, GradInto into) = 0;

  // Mixture of experts (model/moe_block.hpp), N tokens, E experts, the top K of them per token,
  // R = N·K routed rows grouped by expert. A backend without them refuses the model (the defaults
  // throw zt::Error).
  // The router: probs [N, E] = softmax(logits [N, E]) in fp32; experts [N, K] the K most probable
  // (int32, written in ascending expert order), weights [N, K] (fp32) their probabilities, divided
  // by their sum when `normalize`. Logits in dtype(), or in fp32 with fp32_logits (a router kept in
  // fp32: matmul_fp32_forward's output).
  virtual void moe_route(float* probs, int32_t* experts, float* weights, const void* logits, int N, int E, int K,
                         bool normalize, bool fp32_logits);
  // rows[r] = x[token[r]]: the tokens of each expert side by side, [R, C] (and the LM head's rows
  // whose target counts).
  virtual void moe_gather(void* rows, const void* x, const int32_t* token, int R, int C);
  // out[n] = Σ_j weights[n, j] · y[row[n·K + j]] over j ascending (the experts in index order, as
  // transformers' eager loop adds them); row: where token n's j-th expert wrote its output.
  virtual void moe_combine(void* out, const void* y, const float* weights, const int32_t* row, int N, int K, int C);
  // Its backward: dy[row[n·K + j]] = weights[n, j] · dout[n] (written over), dweights[n, j] =
  // dout[n] · y[row[n·K + j]] (fp32, written over).
  virtual void moe_combine_backward(void* dy, float* dweights, const void* dout, const void* y, const float* weights,
                                    const int32_t* row, int N, int K, int C);
  // dx[n] (+)= Σ_j drows[row[n·K + j]]: the gradient of moe_gather, token by token.
  virtual void moe_scatter(void* dx, const void* drows, const int32_t* row, int N, int K, int C, GradInto dx_into);
  // The router's backward: dlogits [N, E] (written over; fp32 with fp32_logits) from dweights
  // through the normalisation and the softmax, plus daux[e] (may be null) in every token's
  // d probs[n, e] (the load-balancing loss's gradient).
  virtual void moe_route_backward(void* dlogits, const float* dweights, const float* probs, const int32_t* experts,
                                  const float* daux, int N, int E, int K, bool normalize, bool fp32_logits);
  // The routed rows grouped by expert where the device computes, nothing read back: offsets [E + 1]
  // (expert e's rows [offsets[e], offsets[e+1]), experts in index order, tokens in order within
  // each), token [R] (each row's token) and row [N·K] (where slot n·K + j went).
  virtual void moe_group(int32_t* offsets, int32_t* token, int32_t* row, const int32_t* experts, int N, int E, int K);
  // The experts' products over their rows (offsets as moe_group writes them), every expert in one
  // call: out[r] = in[r] · W_eᵀ, W_e = weight + e · stride elements, [OC, C] (OutputMajor), written
  // over. Backward: dinp[r] (+)= dout[r] · W_e, dweight_e += Σ_r dout[r]ᵀ · in[r] (either null:
  // skipped); an expert without rows keeps its gradient.
  virtual void moe_expert_forward(void* out, const void* in, const void* weight, size_t stride, const int32_t* offsets,
                                  int E, int R, int C, int OC);
  virtual void moe_expert_backward(void* dinp, void* dweight, const void* dout, const void* in, const void* weight,
                                   size_t stride, const int32_t* offsets, int E, int R, int C, int OC,
                                   GradInto dinp_into);
  // What the load-balancing loss needs of a layer, over its tokens that count (token b·T + t counts
  // when t < padding_from[b]; every token when padding_from is null), in double: stats [2E + 1]
  // (written over) = the top-k slots given to each expert, each expert's probabilities summed in
  // token order, the tokens.
  virtual void moe_route_stats(double* stats, const float* probs, const int32_t* experts,
                               const int32_t* padding_from, int T, int N, int E, int K);
  // Over the stats of L layers side by side ([L, 2E + 1]), f_e = slots / tokens, P_e = probabilities
  // / tokens, the layers together: daux[e] = scale · E · f_e / tokens (fp32; 0 without tokens), the
  // aux loss's gradient in every token's probabilities; and acc[0] += E · Σ_e f_e · P_e (the aux
  // loss), acc[1] = max(acc[1], the busiest expert's slots over the mean, the largest over the layers).
  virtual void moe_aux_grad(float* daux, const double* stats, int L, int E, float scale);
  virtual void moe_aux_accumulate(double* acc, const double* stats, int L, int E);
  // x [B·T, width] of dtype(): the rows of padded tokens (t >= padding_from[b]) set to zero.
  virtual void moe_zero_padding(void* x, const int32_t* padding_from, int B, int T, int width);
  // A gated shared expert (qwen2_moe): out[n] += sigmoid(gate[n]) · y[n], gate [N] (the gate's
  // logits, dtype()); backward writes dy[n] = sigmoid(gate[n]) · dout[n] and dgate[n] = (dout[n] ·
  // y[n]) · sigmoid'(gate[n]) over their contents.
  virtual void moe_gate_add(void* out, const void* y, const void* gate, int N, int C);
  virtual void moe_gate_add_backward(void* dy, void* dgate, const void* dout, const void* y, const void* gate, int N,
                                     int C);

  // The LM head's loss, a chunk of rows at a time (the model never holds the logits of every row):
  // cross_entropy_forward takes N rows of logits (rows Vp wide; softmax over the first V columns)
  // and writes lse[N] (log-sum-exp per row) and losses[N] (lse - logit of the target). A target is
  // in [0, V), or kIgnoredTarget (core/ignored_target.hpp): that row carries no loss (NaN in
  // losses) and no gradient. Reads the logits only.
  virtual void cross_entropy_forward(float* lse, float* losses, const void* logits, const int32_t* targets, int N,
                                     int V, int Vp) = 0;
  // Once every row has its loss: the mean of losses[N] over the rows whose target counts (NaN when
  // none does), and their number into counted[0] (device memory), which cross_entropy_backward
  // reads. Returns the mean (waiting for the device), or keeps it (below) and returns NaN.
  virtual float cross_entropy_loss(int32_t* counted, const float* losses, const int32_t* targets, int N) = 0;
  // The mean losses of forwards with targets, kept where the device computes them: after
  // keep_losses(true), cross_entropy_loss adds its mean loss times the weight of
  // kept_loss_weight (1 until set; a weight of 0 adds nothing) to a sum there, in double
  // (sum += double(loss) · weight, in the order the losses come), and returns NaN without waiting
  // for the device; take_losses() waits once and returns the sum since the last take;
  // take_losses_into(host) queues the same (the sum to `host`, memory the device writes without
  // the host waiting: pinned on a GPU) and returns at once: the value is there once the compute
  // stream has run it. A trainer then reads one number per step, not one per micro-batch.
  virtual void keep_losses(bool keep) = 0;
  virtual void kept_loss_weight(double weight) = 0;
  virtual double take_losses() = 0;
  virtual void take_losses_into(double* host) = 0;
  // The gradient of dloss · the mean loss for N rows of logits (a chunk, with their lse and
  // targets): dlogits = dloss / counted[0] · (softmax - onehot(target)) for the first V columns, 0
  // for the padding, for the whole row of an ignored target, and everywhere when counted[0] is 0.
  // counted[0] is read when the device runs the work (a CUDA graph replayed for another
  // micro-batch reads that micro-batch's count). Overwrites dlogits, which may be the logits
  // buffer itself. softcap > 0: the logits are soft-capped ones (softcap_forward) and dlogits is
  // the gradient of the logits before the cap, times 1 - (logit / softcap)².
  // weights (device memory, N floats, or null): row n's gradient is dloss · weights[n] · (softmax -
  // onehot(target)) instead, counted not read: each target weighted in the loss as it counts there
  // (preference training's sums of log-probabilities, ORPO's NLL beside them).
  virtual void cross_entropy_backward(void* dlogits, const void* logits, const float* lse, const int32_t* targets,
                                      const int32_t* counted, float dloss, int N, int V, int Vp,
                                      float softcap = 0.0f, const float* weights = nullptr) = 0;

  // The LM head on the rows whose target counts only (the rows of a prompt or of a masked turn never
  // reach the vocabulary): counted_rows writes rows[r] = the r-th n < N (ascending) whose target is
  // not kIgnoredTarget and row_targets[r] = targets[n]; the caller knows their number M from the
  // host's tokens. Computed on the device from the device's targets, so a replayed graph finds the
  // rows of the micro-batch it is replayed for. The head gathers their inputs with moe_gather.
  virtual void counted_rows(int32_t* rows, int32_t* row_targets, const int32_t* targets, int N) = 0;
  // Their gradient back: dx [N, C] written over, row rows[r] = drows[r] for r < M, every other row 0.
  virtual void scatter_rows(void* dx, const void* drows, const int32_t* rows, int M, int N, int C) = 0;
};

}  // namespace zt
