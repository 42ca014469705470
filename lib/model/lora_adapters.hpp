#pragma once
// The LoRA adapters' part of the model's computation (model/lora.hpp), through ModelOps like the
// rest. After a projection's matmul, each of its adapters adds scale · B·(A·dropout(x)) to its
// columns of the projection's output; backward adds the adapters' gradients (dA, dB) and their
// part of the input's gradient. Each adapter keeps A·dropout(x) of every block slot for backward;
// the dropout mask is not kept but recomputed from its seed (kernels/dropout_mask.hpp).
#include <cstdint>
#include <optional>
#include <vector>

#include "kernels/backend.hpp"
#include "model/gpt_activations.hpp"
#include "model/lora.hpp"

namespace zt {

class LoraAdapters {
public:
  // block_slots: as GptActivations (n_layer, or 1 when blocks are recomputed in backward). Nothing
  // is allocated without adapters.
  LoraAdapters(const GptShape& shape, const LoraSpec& spec, int max_batch, int max_seq, int block_slots,
               const Backend& backend);
  // The bytes the constructor registers in the ledger as activations.
  static size_t bytes(const GptShape& shape, const LoraSpec& spec, int max_batch, int max_seq, int block_slots,
                      const ModelOps& ops);

  bool enabled() const { return !sites_.empty(); }
  bool adapts(BlockRole projection) const;
  // Dropout from here on with masks drawn from `seed` (a training micro-batch), or none.
  void set_dropout_seed(std::optional<uint64_t> seed) { dropout_seed_ = seed; }
  // Off: forward adds nothing, as PEFT's disabled adapters (the reference of preference training);
  // no backward follows such a forward.
  void set_off(bool off) { off_ = off; }

  // out [N, width] holds the projection's output of input x [N, in]: its adapters add their update.
  // adapters: the layer's adapter group (dtype of the model).
  void forward(BlockRole projection, int layer, int slot, void* out, const void* x, const void* adapters, int N);
  // dout: the gradient of that output; dx (+)= the adapters' part of the input's gradient;
  // dadapters += dA and dB (the layer's adapter group's gradients; null: the adapters are frozen).
  void backward(BlockRole projection, int layer, int slot, void* dx, void* dadapters, const void* dout,
                const void* x, const void* adapters, int N);

private:
  // The input A reads: x, or x through the dropout mask of (layer, site) into dropped_.
  const void* adapter_input(size_t site, int layer, const void* x, int N);
  void* h(int slot, size_t site) { return h_.at((size_t(slot) * sites_.size() + site) * bt_max_ * size_t(r_)); }

  ModelOps& ops_;
  DType dtype_;
  std::vector<LoraSite> sites_;
  int r_ = 0;
  float scale_ = 1.0f, dropout_ = 0.0f;
  size_t bt_max_ = 0;
  std::optional<uint64_t> dropout_seed_;
  bool off_ = false;
  ActTensor h_;        // [slots][sites][BT, r]: A·dropout(x), kept for backward
  ActTensor scratch_;  // [BT, max(in, out)]: B·h before it is added; the scaled output gradient
  ActTensor dropped_;  // [BT, max in]: dropout(x) (dropout > 0 only)
  ActTensor dh_;       // [BT, r]
};

}  // namespace zt
