#pragma once
// The parameters of the compact range a rank's optimizer updates when some parameters are frozen
// (core/trainable_space.hpp): the optimizer updates them here, in the storage dtype, and each
// update is published to where the parameters live in the flat buffer. With nothing frozen the
// stages update the flat buffer itself and none of this exists.
#include "core/buffer.hpp"
#include "zero/param_shard.hpp"
#include "zero/stage.hpp"

namespace zt {

class TrainableParams {
public:
  // compact: the elements of the trainable space this rank updates (all of them at stage 0, its
  // shard of the train partition otherwise).
  TrainableParams(const StageContext& ctx, Range compact);
  // What the optimizer reads and writes.
  ParamShard& shard() { return shard_; }
  // The initial values: init's values of the flat elements they stand for.
  void init(const ParamInit& init);
  // Stage 0: this rank updated every trainable element; they go to the full flat parameters.
  void copy_to(View flat_params);
  // Stages 1-2: the updated ranges of all ranks, all-gathered run by run into the full flat
  // parameters (allgather_bucket_size elements at a time).
  void all_gather_into(View flat_params);
  // Stage 3: all-gathered run by run into a transient buffer, of which the elements in this rank's
  // flat shard go into it.
  void all_gather_into(ParamShard& flat_shard);

private:
  // Each run piece of at most allgather_bucket_size elements, all-gathered to `recv(run piece)`.
  template <typename Recv>
  void gather_runs(Recv&& recv);

  const StageContext& ctx_;
  Range compact_;
  Buffer<uint8_t> values_;
  ResidentParamShard shard_;
};

}  // namespace zt
