#include "model/gpt_activations.hpp"

#include <algorithm>

namespace zt {

namespace {

// Element counts of every buffer, for the constructor to allocate and bytes() to add up. Counts
// of 0 are buffers the family does not use.
struct ActSizes {
  // In the compute dtype.
  size_t residual, ln1, qkv, qkv_att, atty, residual2, ln2, fch, fch_act, post;  // whole buffers (all slots)
  size_t proj, lnf, logits, dresidual, dln, datty, dqkv, dqkv_att, dfch_act, dfch;
  // fp32.
  size_t ln_mean, ln_rstd, qk_rstd, att, lnf_mean, lnf_rstd, lse, losses, head_weights, rope, rope_local, datt,
      post_rstd;
  size_t tokens;    // int32, for inputs and for targets
  size_t segments;  // TokenSegment (two int32)
  size_t counted;   // int32, the count
  size_t head_rows; // int32, for the rows the LM head computes and for their targets

  size_t dtype_elements() const {
    return residual + ln1 + qkv + qkv_att + atty + residual2 + ln2 + fch + fch_act + 2 * post + proj + lnf + logits +
           dresidual + dln + datty + dqkv + dqkv_att + dfch_act + dfch;
  }
  size_t floats() const {
    return 2 * ln_mean + 2 * ln_rstd + qk_rstd + att + lnf_mean + lnf_rstd + lse + losses + head_weights + 2 * rope +
           2 * rope_local + datt + 2 * post_rstd;
  }
  size_t int32s() const { return 2 * tokens + 2 * segments + counted + 2 * head_rows; }
};

// The rows the LM head computes at most: head_rows when it bounds them below BT.
size_t head_rows_bound(size_t BT, int head_rows) { return head_rows > 0 ? std::min(BT, size_t(head_rows)) : BT; }

ActSizes sizes_of(const GptShape& shape, int max_batch, int max_seq, int block_slots, const ModelOps& ops,
                  size_t logits_bytes, int head_rows) {
  const BlockRecipe r = shape.recipe();
  const size_t BT = size_t(max_batch) * size_t(max_seq), C = size_t(shape.d_model), slots = size_t(block_slots);
  const size_t QKV = size_t(shape.qkv_width()), Q = size_t(shape.q_width()), F = size_t(shape.ff_width());
  const size_t fc = r.swiglu ? 2 * F : F;  // the MLP's first projection: gate and up side by side for SwiGLU
  const size_t heads = size_t(shape.n_head + shape.kv_heads());
  ActSizes s{};
  s.residual = size_t(shape.n_layer + 1) * BT * C;
  s.ln1 = s.ln2 = s.residual2 = slots * BT * C;
  s.qkv = slots * BT * QKV;
  s.qkv_att = r.qk_norm ? slots * BT * QKV : 0;
  s.atty = slots * BT * Q;
  s.fch = slots * BT * fc;
  s.fch_act = slots * BT * F;
  s.proj = s.lnf = s.dresidual = s.dln = BT * C;
  s.logits = size_t(logit_rows(shape, head_rows_bound(BT, head_rows), ops.dtype(), logits_bytes)) *
             size_t(shape.padded_vocab());
  s.datty = BT * Q;
  s.dqkv = BT * QKV;
  s.dqkv_att = r.qk_norm ? BT * QKV : 0;
  s.dfch_act = BT * F;
  s.dfch = BT * fc;
  s.ln_mean = r.rms_norm ? 0 : slots * BT;
  s.ln_rstd = slots * BT;
  s.qk_rstd = r.qk_norm ? slots * BT * heads : 0;
  s.att = slots * ops.attention_saved_floats(max_batch, max_seq, shape.n_head);
  s.lnf_mean = r.rms_norm ? 0 : BT;
  s.lnf_rstd = s.lse = s.losses = s.head_weights = BT;
  s.rope = r.rotary ? size_t(max_seq) * size_t(shape.head_size() / 2) : 0;
  s.rope_local = shape.rope_local_base_freq > 0 ? s.rope : 0;
  s.post = r.gemma ? slots * BT * C : 0;
  s.post_rstd = r.gemma ? slots * BT : 0;
  s.datt = ops.attention_scratch_floats(max_batch, max_seq, shape.n_head);
  s.tokens = BT;
  s.segments = BT;
  s.counted = 1;
  s.head_rows = BT;
  return s;
}

}  // namespace

int logit_rows(const GptShape& shape, size_t rows, DType dtype, size_t logits_bytes) {
  constexpr size_t kTile = 64;
  size_t fit = logits_bytes / (size_t(shape.padded_vocab()) * dtype_size(dtype));
  if (fit > kTile) fit -= fit % kTile;
  return int(std::clamp<size_t>(fit, 1, std::max<size_t>(rows, 1)));
}

GptActivations::GptActivations(const GptShape& shape, int max_batch, int max_seq, int block_slots,
                               const Backend& backend, size_t logits_bytes, int head_rows)
    : bt_max_(size_t(max_batch) * max_seq),
      C_(size_t(shape.d_model)),
      qkv_(size_t(shape.qkv_width())),
      q_(size_t(shape.q_width())),
      fc_(size_t(shape.ff_width()) * (shape.recipe().swiglu ? 2 : 1)),
      act_(size_t(shape.ff_width())),
      att_slot_(backend.model.attention_saved_floats(max_batch, max_seq, shape.n_head)),
      heads_(size_t(shape.n_head + shape.kv_heads())),
      logit_rows_(zt::logit_rows(shape, head_rows_bound(bt_max_, head_rows), backend.model.dtype(), logits_bytes)) {
  Device& dev = backend.device;
  const DType dt = backend.model.dtype();
  const ActSizes s = sizes_of(shape, max_batch, max_seq, block_slots, backend.model, logits_bytes, head_rows);
  auto int32s = [&](size_t n) { return Buffer<int32_t>(dev, MemSpace::Device, MemCategory::Activations, n); };
  auto tensor = [&](size_t n) { return ActTensor(dev, dt, n); };
  auto floats = [&](size_t n) { return Buffer<float>(dev, MemSpace::Device, MemCategory::Activations, n); };

  residual_ = tensor(s.residual);
  ln1_ = tensor(s.ln1);
  ln1_mean_ = floats(s.ln_mean);
  ln1_rstd_ = floats(s.ln_rstd);
  qkv_buf_ = tensor(s.qkv);
  qkv_att_ = tensor(s.qkv_att);
  qk_rstd_ = floats(s.qk_rstd);
  atty_ = tensor(s.atty);
  att_ = floats(s.att);
  residual2_ = tensor(s.residual2);
  ln2_ = tensor(s.ln2);
  ln2_mean_ = floats(s.ln_mean);
  ln2_rstd_ = floats(s.ln_rstd);
  fch_ = tensor(s.fch);
  fch_gelu_ = tensor(s.fch_act);

  proj = tensor(s.proj);
  lnf = tensor(s.lnf);
  lnf_mean = floats(s.lnf_mean);
  lnf_rstd = floats(s.lnf_rstd);
  logits = tensor(s.logits);
  lse = floats(s.lse);
  losses = floats(s.losses);
  inputs = int32s(s.tokens);
  targets = int32s(s.tokens);
  segments = Buffer<TokenSegment>(dev, MemSpace::Device, MemCategory::Activations, s.segments);
  counted = int32s(s.counted);
  head_weights = floats(s.head_weights);
  this->head_rows = int32s(s.head_rows);  // (the parameter is the bound)
  head_targets = int32s(s.head_rows);
  rope_cos = floats(s.rope);
  rope_sin = floats(s.rope);
  rope_local_cos = floats(s.rope_local);
  rope_local_sin = floats(s.rope_local);
  attn_out_ = tensor(s.post);
  mlp_out_ = tensor(s.post);
  attn_rstd_ = floats(s.post_rstd);
  mlp_rstd_ = floats(s.post_rstd);

  dresidual = tensor(s.dresidual);
  dln = tensor(s.dln);
  datty = tensor(s.datty);
  dqkv = tensor(s.dqkv);
  dqkv_att = tensor(s.dqkv_att);
  dfch_gelu = tensor(s.dfch_act);
  dfch = tensor(s.dfch);
  datt = floats(s.datt);
}

size_t GptActivations::bytes(const GptShape& shape, int max_batch, int max_seq, int block_slots, const ModelOps& ops,
                             size_t logits_bytes, int head_rows) {
  const ActSizes s = sizes_of(shape, max_batch, max_seq, block_slots, ops, logits_bytes, head_rows);
  return s.dtype_elements() * dtype_size(ops.dtype()) + s.floats() * sizeof(float) + s.int32s() * sizeof(int32_t);
}

BlockActivations GptActivations::block(int slot) {
  const size_t s = size_t(slot), BT = bt_max_;
  auto stats = [&](Buffer<float>& b, size_t per_row) { return b.empty() ? nullptr : b.data() + s * BT * per_row; };
  void* qkv = qkv_buf_.at(s * BT * qkv_);
  void* qkv_att = qkv_att_.at(s * BT * qkv_);
  return BlockActivations{
      ln1_.at(s * BT * C_),
      stats(ln1_mean_, 1),
      stats(ln1_rstd_, 1),
      qkv,
      qkv_att ? qkv_att : qkv,
      stats(qk_rstd_, heads_),
      atty_.at(s * BT * q_),
      att_.data() + s * att_slot_,
      residual2_.at(s * BT * C_),
      ln2_.at(s * BT * C_),
      stats(ln2_mean_, 1),
      stats(ln2_rstd_, 1),
      fch_.at(s * BT * fc_),
      fch_gelu_.at(s * BT * act_),
      attn_out_.at(s * BT * C_),
      stats(attn_rstd_, 1),
      mlp_out_.at(s * BT * C_),
      stats(mlp_rstd_, 1),
  };
}

}  // namespace zt
