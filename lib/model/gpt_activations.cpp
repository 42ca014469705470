#include "model/gpt_activations.hpp"

#include "kernels/cpu/attention.hpp"

namespace zt {

GptActivations::GptActivations(const GptShape& shape, int max_batch, int max_seq, int block_slots)
    : bt_max_(size_t(max_batch) * max_seq),
      C_(size_t(shape.d_model)),
      att_slot_(size_t(max_batch) * shape.n_head * max_seq * max_seq) {
  constexpr auto A = MemCategory::Activations;
  const size_t BT = bt_max_, C = C_, Vp = size_t(shape.padded_vocab()), slots = size_t(block_slots);
  residual_ = Buffer<float>(A, size_t(shape.n_layer + 1) * BT * C);
  ln1_ = Buffer<float>(A, slots * BT * C);
  ln1_mean_ = Buffer<float>(A, slots * BT);
  ln1_rstd_ = Buffer<float>(A, slots * BT);
  qkv_ = Buffer<float>(A, slots * BT * 3 * C);
  atty_ = Buffer<float>(A, slots * BT * C);
  att_ = Buffer<float>(A, slots * att_slot_);
  residual2_ = Buffer<float>(A, slots * BT * C);
  ln2_ = Buffer<float>(A, slots * BT * C);
  ln2_mean_ = Buffer<float>(A, slots * BT);
  ln2_rstd_ = Buffer<float>(A, slots * BT);
  fch_ = Buffer<float>(A, slots * BT * 4 * C);
  fch_gelu_ = Buffer<float>(A, slots * BT * 4 * C);

  proj = Buffer<float>(A, BT * C);
  lnf = Buffer<float>(A, BT * C);
  lnf_mean = Buffer<float>(A, BT);
  lnf_rstd = Buffer<float>(A, BT);
  logits = Buffer<float>(A, BT * Vp);
  lse = Buffer<float>(A, BT);
  inputs = Buffer<int32_t>(A, BT);
  targets = Buffer<int32_t>(A, BT);

  dresidual = Buffer<float>(A, BT * C);
  dln = Buffer<float>(A, BT * C);
  datty = Buffer<float>(A, BT * C);
  dqkv = Buffer<float>(A, BT * 3 * C);
  dfch_gelu = Buffer<float>(A, BT * 4 * C);
  dfch = Buffer<float>(A, BT * 4 * C);
  datt = Buffer<float>(A, cpu::attention_backward_scratch_size(max_batch, max_seq, shape.n_head));
}

size_t GptActivations::bytes(const GptShape& shape, int max_batch, int max_seq, int block_slots) {
  const size_t BT = size_t(max_batch) * max_seq, C = size_t(shape.d_model), Vp = size_t(shape.padded_vocab());
  const size_t slots = size_t(block_slots), att = size_t(max_batch) * shape.n_head * max_seq * max_seq;
  const size_t per_block = BT * C * 4 + BT * 4 + BT * 3 * C + att + BT * 4 * C * 2;  // ln1..fch_gelu
  const size_t floats = size_t(shape.n_layer + 1) * BT * C + slots * per_block  // residual stream, blocks
                        + BT * C * 2 + BT * 3 + BT * Vp                         // proj, lnf, logits, lse
                        + BT * C * 3 + BT * 3 * C + BT * 4 * C * 2              // backward scratch
                        + cpu::attention_backward_scratch_size(max_batch, max_seq, shape.n_head);
  return floats * sizeof(float) + 2 * BT * sizeof(int32_t);  // + inputs, targets
}

BlockActivations GptActivations::block(int slot) {
  const size_t s = size_t(slot), BT = bt_max_, C = C_;
  return BlockActivations{
      ln1_.data() + s * BT * C,       ln1_mean_.data() + s * BT, ln1_rstd_.data() + s * BT,
      qkv_.data() + s * BT * 3 * C,   atty_.data() + s * BT * C, att_.data() + s * att_slot_,
      residual2_.data() + s * BT * C, ln2_.data() + s * BT * C,  ln2_mean_.data() + s * BT,
      ln2_rstd_.data() + s * BT,      fch_.data() + s * BT * 4 * C, fch_gelu_.data() + s * BT * 4 * C,
  };
}

}  // namespace zt
