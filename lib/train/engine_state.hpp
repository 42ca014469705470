#pragma once
// The ZeRO engine's optimizer state as checkpoints see it (ckpt/state_access.hpp).
#include "ckpt/state_access.hpp"
#include "zero/engine.hpp"

namespace zt {

class EngineState final : public StateAccess {
public:
  explicit EngineState(Engine& engine) : engine_(engine) {}
  ElementRange held() const override;
  void read(ShardTensor t, ElementRange r, float* host) override;
  void write(ShardTensor t, ElementRange r, const float* host) override;

private:
  Engine& engine_;
};

// The flat elements each rank writes to a checkpoint, in rank order: its partition's trained
// range (so the files are spread over the ranks even at stage 0, where every rank holds all).
std::vector<ElementRange> checkpoint_pieces(const Partition& partition);

}  // namespace zt
