#pragma once
// How checkpoints reach the optimizer state of a running job without knowing the engine: the
// trainer adapts its ZeRO engine to this (train/engine_state.hpp), tests use plain arrays.
#include "ckpt/checkpoint_format.hpp"

namespace zt {

class StateAccess {
public:
  virtual ~StateAccess() = default;
  // The flat elements whose state this rank holds (its shard, or everything at stage 0).
  virtual ElementRange held() const = 0;
  // Copy state of a sub-range of held() to and from host memory.
  virtual void read(ShardTensor t, ElementRange r, float* host) = 0;
  virtual void write(ShardTensor t, ElementRange r, const float* host) = 0;
};

}  // namespace zt
