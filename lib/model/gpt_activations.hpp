#pragma once
// The activation memory of the model, allocated once in device memory for the largest
// micro-batch (B, T) it was built for and registered in the memory ledger as Activations. For a
// smaller batch every tensor uses the first B·T rows of its slot. Tensors hold elements of the
// backend's dtype (bf16 where a GPU trains in bf16), except the fp32 statistics (mean, rstd, lse,
// the per-row losses, what attention saves), the rotary tables, tokens, the samples of packed rows
// and the count of targets.
// Tensors a family does not use are not allocated (their pointers are null).
// What grows with B·T and the vocabulary together never does: the LM head computes the logits of
// logit_rows() rows at a time (docs/architecture.md, "Activations"), and attention keeps one
// log-sum-exp per query row, not its T x T probabilities.
#include <cstddef>
#include <cstdint>

#include "core/buffer.hpp"
#include "core/token_segment.hpp"
#include "kernels/backend.hpp"
#include "model/gpt_shape.hpp"

namespace zt {

// A device tensor of the model's compute dtype.
class ActTensor {
public:
  ActTensor() = default;
  ActTensor(Device& device, DType dtype, size_t n)
      : dtype_(dtype), bytes_(device, MemSpace::Device, MemCategory::Activations, n * dtype_size(dtype)) {}
  void* data() { return bytes_.data(); }
  const void* data() const { return bytes_.data(); }
  // Element `elements` on; null for a tensor that was not allocated.
  void* at(size_t elements) { return bytes_.empty() ? nullptr : bytes_.data() + elements * dtype_size(dtype_); }
  size_t bytes() const { return bytes_.bytes(); }

private:
  DType dtype_ = DType::F32;
  Buffer<uint8_t> bytes_;
};

// One transformer block's saved forward results (pointers into GptActivations' buffers). BT rows;
// C = d_model, QKV = (NH + 2·NKV)·hd the packed projection, Q = NH·hd, F the MLP width.
struct BlockActivations {
  void* ln1;          // [BT, C]  first norm's output
  float* ln1_mean;    // [BT]     (LayerNorm only)
  float* ln1_rstd;    // [BT]
  void* qkv;          // [BT, QKV] the packed projection's output
  void* qkv_att;      // [BT, QKV] what attention reads: qkv after the q/k norms (qwen3), then
                      //           rotated (rotary families); the same buffer as qkv without q/k norms
  float* qk_rstd;     // [BT, NH + NKV] (q/k norms only)
  void* atty;         // [BT, Q]  attention output, input of the output projection
  float* att;         // what attention saves for backward (ModelOps::attention_saved_floats)
  void* residual2;    // [BT, C]  block input + attention branch
  void* ln2;          // [BT, C]
  float* ln2_mean;    // [BT]     (LayerNorm only)
  float* ln2_rstd;    // [BT]
  void* fch;          // [BT, F] mlp.c_fc output | [BT, 2F] gate and up projections
  void* fch_gelu;     // [BT, F] the activation's output (GELU | SwiGLU)
  // Gemma's norms of the branch outputs: the attention's and the MLP's output projections before
  // them, and their rstd (null for the other families).
  void* attn_out;     // [BT, C]
  float* attn_rstd;   // [BT]
  void* mlp_out;      // [BT, C]
  float* mlp_rstd;    // [BT]
};

// The logits the LM head holds at once: 512 MiB, about a thousand rows of a 150k vocabulary in
// bf16, enough for the head's GEMMs to run at full speed. Backward computes the logits again for
// every chunk but the last (2·C·Vp FLOPs a row): a larger budget computes fewer twice.
constexpr size_t kLogitsBytes = size_t(512) << 20;

// Rows of logits in `logits_bytes` (a whole number of 64-row tiles when more than one fits), at
// least 1 and at most `rows`, the micro-batch's.
int logit_rows(const GptShape& shape, size_t rows, DType dtype, size_t logits_bytes = kLogitsBytes);

class GptActivations {
public:
  // block_slots: n_layer to keep every block's activations, 1 to recompute them in backward.
  // logits_bytes: what the LM head's logits may take (logit_rows). head_rows: the most rows the
  // head computes in a micro-batch, the rows whose target counts (0: every row, B·T), which the
  // logits need not exceed.
  GptActivations(const GptShape& shape, int max_batch, int max_seq, int block_slots,
                 const Backend& backend = cpu_backend(), size_t logits_bytes = kLogitsBytes, int head_rows = 0);
  // The bytes the constructor registers in the ledger, without allocating (--dry-run's plan).
  static size_t bytes(const GptShape& shape, int max_batch, int max_seq, int block_slots,
                      const ModelOps& ops = cpu_backend().model, size_t logits_bytes = kLogitsBytes,
                      int head_rows = 0);

  BlockActivations block(int slot);
  void* residual(int i) { return residual_.at(size_t(i) * bt_max_ * C_); }  // [BT, C], i in [0, n_layer]

  // Forward scratch and the final norm / LM head.
  ActTensor proj;  // [BT, C] output of a c_proj matmul before its residual add
  ActTensor lnf;   // [BT, C]
  Buffer<float> lnf_mean, lnf_rstd;  // lnf_mean: LayerNorm only
  ActTensor logits;  // [logit_rows(), Vp]: one chunk of rows; overwritten by dlogits in backward
  Buffer<float> lse;     // [BT] log-sum-exp of each logits row
  Buffer<float> losses;  // [BT] each row's loss (NaN for a target that does not count)
  Buffer<int32_t> inputs, targets;  // the last forward's tokens, on the device
  Buffer<TokenSegment> segments;    // [BT] the last forward's samples of packed rows (RowSegments' table)
  Buffer<int32_t> counted;          // [1] the last forward's targets that count, on the device
  Buffer<float> head_weights;       // [BT] the weight of each head row's loss in a backward by weights
  // [BT] the rows whose target counts (ModelOps::counted_rows), when the head computes only those,
  // and their targets.
  Buffer<int32_t> head_rows, head_targets;
  // Rotary families: cos and sin of every position's angles, [max_seq, hd/2] each; those of the
  // sliding layers where their rotary base differs (gemma3_text), else empty.
  Buffer<float> rope_cos, rope_sin, rope_local_cos, rope_local_sin;

  // Backward scratch, reused by every block.
  ActTensor dresidual;  // [BT, C] gradient flowing down the residual stream
  ActTensor dln;        // [BT, C]
  ActTensor datty;      // [BT, Q]
  ActTensor dqkv;       // [BT, QKV]
  ActTensor dqkv_att;   // [BT, QKV] (q/k norms only: the gradient of qkv_att)
  ActTensor dfch_gelu;  // [BT, F]
  ActTensor dfch;       // [BT, F | 2F]
  Buffer<float> datt;   // attention's scratch, forward and backward (ModelOps::attention_scratch_floats)

  int logit_rows() const { return logit_rows_; }

private:
  size_t bt_max_, C_, qkv_, q_, fc_, act_, att_slot_, heads_;
  int logit_rows_;
  ActTensor residual_;  // [n_layer + 1][BT, C]: embeddings, then each block's output
  ActTensor ln1_, qkv_buf_, qkv_att_, atty_, residual2_, ln2_, fch_, fch_gelu_, attn_out_, mlp_out_;
  Buffer<float> ln1_mean_, ln1_rstd_, qk_rstd_, att_, ln2_mean_, ln2_rstd_, attn_rstd_, mlp_rstd_;
};

}  // namespace zt
