#pragma once
// The run's optimizer state as the whole training layout's trainable space (Gpt::whole_layout,
// core/trainable_space.hpp), what checkpoints hold and exports read, over an engine whose layout
// may be an expert-parallel rank's (model/expert_layout.hpp): there each rank holds a piece of
// domain 0 and a piece of its experts' domain 1, which lie scattered in the whole space. Without
// expert parallelism it is the engine itself.
#include <vector>

#include "ckpt/checkpoint_reader.hpp"
#include "comm/communicator.hpp"
#include "core/state_access.hpp"
#include "model/gpt.hpp"
#include "zero/engine.hpp"
#include "zero/partition.hpp"

namespace zt {

class WholeState final : public StateAccess {
public:
  // chunk: elements of the whole space gather() moves at a time.
  WholeState(Engine& engine, const Gpt& model, Communicator& comm, size_t chunk = size_t(4) << 20);

  // The whole trainable space over the world's ranks: the piece each rank writes of a checkpoint.
  const Partition& partition() const { return partition_; }
  size_t numel() const { return partition_.numel(); }

  // Collective: what the engine holds of the state tensors (the master alone when master_only) moved
  // to this rank's piece of partition(), which read_state then serves. Nothing to do without expert
  // parallelism. The move goes through reduce-scatters of the whole space in fp32, `chunk` elements
  // (16 MiB) at a time (each element comes from the one rank that updates it, zeros from the others).
  void gather(bool master_only = false);

  // Without expert parallelism the engine's; with it, this rank's piece of partition() after
  // gather(), which write_state does not take (load() writes the engine's state).
  Range held() const override;
  void read_state(StateTensor t, Range r, float* host) const override;
  void write_state(StateTensor t, Range r, const float* host) override;

  // A checkpoint's state (of the whole training layout) into the engine's, what this rank holds of
  // each domain; the master alone when weights_only. Not collective; publish_written_state follows.
  void load(const CheckpointReader& checkpoint, bool weights_only) const;

private:
  Engine& engine_;
  Device& device_;
  const LayoutMap* map_;
  Communicator& comm_;
  Partition partition_;
  size_t chunk_;
  std::vector<float> gathered_[3];  // per state tensor: this rank's piece of partition_
};

}  // namespace zt
