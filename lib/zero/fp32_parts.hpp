#pragma once
// The parameters kept in fp32 under a 16-bit training dtype (TensorSpec::keep_fp32,
// data_types.keep_in_fp32_modules): a second working copy of them in fp32, whole on every rank at
// every stage, which the model's fp32 copy of their group takes in place of the training dtype's
// rounding. Trained ones take the optimizer's fp32 master after every update (all-gathered from
// the ranks that update them, in fp32); frozen ones keep their initial values. The master of a kept
// tensor starts at its exact initial values, so what is trained, checkpointed and exported is the
// fp32 value the model computed with. Gradients are reduced in the training dtype as all others.
#include <vector>

#include "core/buffer.hpp"
#include "zero/shard_optimizer.hpp"
#include "zero/stage.hpp"

namespace zt {

class Fp32Parts {
public:
  explicit Fp32Parts(const StageContext& ctx);
  // The device bytes of the copy: 4 per kept element under a 16-bit dtype, none in fp32 training.
  static size_t bytes(const ParamLayout& layout, DType dtype);
  bool empty() const { return pieces_.empty(); }
  // Initial values from init; the master of the kept elements this rank updates (`held`, in the
  // trainable space) takes them exactly. After the optimizer's init_master.
  void init(const ParamInit& init, ShardOptimizer& optimizer, Range held);
  // After an update or a written master: the trained kept values from the master. Collective.
  void refresh(ShardOptimizer& optimizer, Range held);
  // The kept tensors of group g into the model's copy of it (fp32, group-relative).
  void overlay(int g, ConstView group) const;

private:
  struct Piece {
    int group = 0;
    size_t flat = 0, size = 0;  // the tensor's flat elements
    size_t slot = 0;            // its first element in values_
    bool trained = false;
    size_t compact = 0;  // trained: its first element in the trainable space
  };
  // The part of a trained piece this rank's master holds, relative to the piece.
  static Range own_part(const Piece& p, Range held);
  void upload(const Piece& p, Range part, const float* host);

  const StageContext& ctx_;
  std::vector<Piece> pieces_;
  Buffer<float> values_;
};

}  // namespace zt
