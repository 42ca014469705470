#pragma once
// The activation memory of the GPT model, allocated once for the largest micro-batch (B, T) it
// was built for and registered in the memory ledger as Activations. For a smaller batch every
// tensor uses the first B·T rows of its slot.
#include <cstddef>
#include <cstdint>

#include "core/buffer.hpp"
#include "model/gpt_shape.hpp"

namespace zt {

// One transformer block's saved forward results (pointers into GptActivations' buffers).
struct BlockActivations {
  float* ln1;        // [BT, C]
  float* ln1_mean;   // [BT]
  float* ln1_rstd;   // [BT]
  float* qkv;        // [BT, 3C]
  float* atty;       // [BT, C]  attention output, input of attn.c_proj
  float* att;        // [B, NH, T, T] softmax probabilities
  float* residual2;  // [BT, C]  block input + attention branch
  float* ln2;        // [BT, C]
  float* ln2_mean;   // [BT]
  float* ln2_rstd;   // [BT]
  float* fch;        // [BT, 4C] mlp.c_fc output
  float* fch_gelu;   // [BT, 4C]
};

class GptActivations {
public:
  // block_slots: n_layer to keep every block's activations, 1 to recompute them in backward.
  GptActivations(const GptShape& shape, int max_batch, int max_seq, int block_slots);
  // The bytes the constructor registers in the ledger, without allocating (--dry-run's plan).
  static size_t bytes(const GptShape& shape, int max_batch, int max_seq, int block_slots);

  BlockActivations block(int slot);
  float* residual(int i) { return residual_.data() + size_t(i) * bt_max_ * C_; }  // [BT, C], i in [0, n_layer]

  // Forward scratch and the final norm / LM head.
  Buffer<float> proj;  // [BT, C] output of a c_proj matmul before its residual add
  Buffer<float> lnf, lnf_mean, lnf_rstd;
  Buffer<float> logits;  // [BT, Vp]; overwritten by dlogits in backward
  Buffer<float> lse;     // [BT] log-sum-exp of each logits row
  Buffer<int32_t> inputs, targets;  // copies of the last forward's tokens, for backward

  // Backward scratch, reused by every block.
  Buffer<float> dresidual;  // [BT, C] gradient flowing down the residual stream
  Buffer<float> dln;        // [BT, C]
  Buffer<float> datty;      // [BT, C]
  Buffer<float> dqkv;       // [BT, 3C]
  Buffer<float> dfch_gelu;  // [BT, 4C]
  Buffer<float> dfch;       // [BT, 4C]
  Buffer<float> datt;       // attention backward scratch [B, NH, T, T]

private:
  size_t bt_max_, C_, att_slot_;
  Buffer<float> residual_;  // [n_layer + 1][BT, C]: embeddings, then each block's output
  Buffer<float> ln1_, ln1_mean_, ln1_rstd_, qkv_, atty_, att_, residual2_, ln2_, ln2_mean_, ln2_rstd_, fch_,
      fch_gelu_;
};

}  // namespace zt
