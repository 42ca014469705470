#include "model/gpt_activations.hpp"

namespace zt {

GptActivations::GptActivations(const GptShape& shape, int max_batch, int max_seq, int block_slots,
                               const Backend& backend)
    : bt_max_(size_t(max_batch) * max_seq),
      C_(size_t(shape.d_model)),
      att_slot_(backend.model.attention_saved_floats(max_batch, max_seq, shape.n_head)) {
  Device& dev = backend.device;
  const DType dt = backend.model.dtype();
  constexpr auto A = MemCategory::Activations;
  constexpr auto D = MemSpace::Device;
  const size_t BT = bt_max_, C = C_, Vp = size_t(shape.padded_vocab()), slots = size_t(block_slots);
  auto tensor = [&](size_t n) { return ActTensor(dev, dt, n); };
  auto floats = [&](size_t n) { return Buffer<float>(dev, D, A, n); };

  residual_ = tensor(size_t(shape.n_layer + 1) * BT * C);
  ln1_ = tensor(slots * BT * C);
  ln1_mean_ = floats(slots * BT);
  ln1_rstd_ = floats(slots * BT);
  qkv_ = tensor(slots * BT * 3 * C);
  atty_ = tensor(slots * BT * C);
  att_ = floats(slots * att_slot_);
  residual2_ = tensor(slots * BT * C);
  ln2_ = tensor(slots * BT * C);
  ln2_mean_ = floats(slots * BT);
  ln2_rstd_ = floats(slots * BT);
  fch_ = tensor(slots * BT * 4 * C);
  fch_gelu_ = tensor(slots * BT * 4 * C);

  proj = tensor(BT * C);
  lnf = tensor(BT * C);
  lnf_mean = floats(BT);
  lnf_rstd = floats(BT);
  logits = tensor(BT * Vp);
  lse = floats(BT);
  inputs = Buffer<int32_t>(dev, D, A, BT);
  targets = Buffer<int32_t>(dev, D, A, BT);

  dresidual = tensor(BT * C);
  dln = tensor(BT * C);
  datty = tensor(BT * C);
  dqkv = tensor(BT * 3 * C);
  dfch_gelu = tensor(BT * 4 * C);
  dfch = tensor(BT * 4 * C);
  datt = floats(backend.model.attention_scratch_floats(max_batch, max_seq, shape.n_head));
}

size_t GptActivations::bytes(const GptShape& shape, int max_batch, int max_seq, int block_slots, const ModelOps& ops) {
  const size_t BT = size_t(max_batch) * max_seq, C = size_t(shape.d_model), Vp = size_t(shape.padded_vocab());
  const size_t slots = size_t(block_slots), att = ops.attention_saved_floats(max_batch, max_seq, shape.n_head);
  const size_t elements = size_t(shape.n_layer + 1) * BT * C                   // residual stream
                          + slots * (BT * C * 4 + BT * 3 * C + BT * 4 * C * 2)  // ln1, atty, residual2, ln2, qkv, fch*
                          + BT * C * 2 + BT * Vp                                // proj, lnf, logits
                          + BT * C * 3 + BT * 3 * C + BT * 4 * C * 2;           // backward scratch
  const size_t floats = slots * (BT * 4 + att)  // ln1/ln2 mean and rstd, attention's saved state
                        + BT * 3                // lnf mean, rstd, lse
                        + ops.attention_scratch_floats(max_batch, max_seq, shape.n_head);
  return elements * dtype_size(ops.dtype()) + floats * sizeof(float) + 2 * BT * sizeof(int32_t);
}

BlockActivations GptActivations::block(int slot) {
  const size_t s = size_t(slot), BT = bt_max_, C = C_;
  return BlockActivations{
      ln1_.at(s * BT * C),       ln1_mean_.data() + s * BT, ln1_rstd_.data() + s * BT,
      qkv_.at(s * BT * 3 * C),   atty_.at(s * BT * C),      att_.data() + s * att_slot_,
      residual2_.at(s * BT * C), ln2_.at(s * BT * C),       ln2_mean_.data() + s * BT,
      ln2_rstd_.data() + s * BT, fch_.at(s * BT * 4 * C),   fch_gelu_.at(s * BT * 4 * C),
  };
}

}  // namespace zt
