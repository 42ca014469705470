#pragma once
// The parameters kept in fp32 under a 16-bit training dtype (TensorSpec::keep_fp32,
// data_types.keep_in_fp32_modules): a second working copy of them in fp32, whole on every rank at
// every stage. A model that computes in fp32 (the CPU's) reads them in its fp32 copy of their
// group, which takes them in place of the training dtype's rounding; one that computes in the
// 16-bit dtype (a GPU's) reads them here beside the group (values(g)) and writes their fp32
// gradients here too (grads(g)). Trained ones take the optimizer's fp32 master after every update
// (all-gathered from the ranks that update them, in fp32); frozen ones keep their initial values.
// The master of a kept tensor starts at its exact initial values, so what is trained, checkpointed
// and exported is the fp32 value the model computed with. The trained ones' gradients have an fp32
// space of their own here, as DeepSpeed and transformers keep an fp32 module's gradients in fp32:
// accumulated over micro-batches and summed over the ranks in fp32 (reduce_grads), and read by the
// optimizer from here (ShardOptimizer::update's kept gradients), while their places in the
// training dtype's gradient buffers stay zero.
#include <vector>

#include "core/buffer.hpp"
#include "zero/shard_optimizer.hpp"
#include "zero/stage.hpp"

namespace zt {

class Fp32Parts {
public:
  explicit Fp32Parts(const StageContext& ctx);
  // The device bytes of the copy: 4 per kept element under a 16-bit dtype, none in fp32 training;
  // and of the gradients (grad_bytes): 4 per trained kept element.
  static size_t bytes(const ParamLayout& layout, DType dtype);
  static size_t grad_bytes(const ParamLayout& layout, DType dtype);
  bool empty() const { return pieces_.empty(); }
  // Initial values from init; the master of the kept elements this rank updates (`held`, in the
  // trainable space) takes them exactly. After the optimizer's init_master.
  void init(const ParamInit& init, ShardOptimizer& optimizer, Range held);
  // After an update or a written master: the trained kept values from the master. Collective.
  void refresh(ShardOptimizer& optimizer, Range held);
  // The kept tensors of group g into the model's copy of it (fp32, group-relative: the stage's
  // FetchedGroup::copy), when the model computes in fp32.
  void overlay(int g, View group) const;
  // When the model computes in the 16-bit dtype: group g's kept tensors side by side in its order,
  // in fp32, and where it adds their gradients (null views when it keeps none, or none it trains,
  // or the model computes in fp32).
  ConstView values(int g) const;
  View grads(int g);
  // A model computing in fp32: the trained kept tensors' gradients of the micro-batch, from `group`
  // (its gradients of group g, fp32), added here; zeros left in their place.
  void take_grads(int g, View group);
  // At the accumulation boundary: the gradients summed over the ranks, in fp32 (collective).
  void reduce_grads();
  // The reduced gradients' sum of squares times `factor` into *sum (device memory).
  void norm_partial(float factor, double* sum);
  // The reduced gradients of the trained kept tensors, side by side in layout order (the trainable
  // space's order): what ShardOptimizer::update reads for them. Null when there are none.
  const float* kept_grads() const { return grads_.empty() ? nullptr : grads_.data(); }
  void zero_grads();

private:
  struct Piece {
    int group = 0;
    size_t flat = 0, size = 0;  // the tensor's flat elements
    size_t slot = 0;            // its first element in values_
    bool trained = false;
    size_t compact = 0;    // trained: its first element in the trainable space
    size_t grad_slot = 0;  // trained: its first element in grads_
  };
  // The part of a trained piece this rank's master holds, relative to the piece.
  static Range own_part(const Piece& p, Range held);
  void upload(const Piece& p, Range part, const float* host);

  // Whether the model reads group g's kept tensors here.
  bool beside(int g) const { return ctx_.model_dtype != DType::F32 && first_slot_[size_t(g)] != kNone; }
  static constexpr size_t kNone = ~size_t(0);

  const StageContext& ctx_;
  std::vector<Piece> pieces_;
  // Per group: its first kept element in values_, its first trained one in grads_ (or kNone).
  std::vector<size_t> first_slot_, first_grad_;
  Buffer<float> values_;
  Buffer<float> grads_;  // the trained pieces' gradients, side by side
};

}  // namespace zt
