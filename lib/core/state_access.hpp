#pragma once
// The optimizer state of the flat parameters a rank holds: what checkpoints save and restore. The
// ZeRO engine implements it; checkpoints reach the state through it without knowing the engine
// (tests use plain arrays).
#include "core/range.hpp"

namespace zt {

// The three fp32 arrays of the optimizer state: master weights, Adam's m and v.
enum class StateTensor { Master, AdamM, AdamV };
constexpr StateTensor kStateTensors[] = {StateTensor::Master, StateTensor::AdamM, StateTensor::AdamV};

class StateAccess {
public:
  virtual ~StateAccess() = default;
  // The flat elements whose state this rank holds (its shard, or everything at stage 0), padding
  // excluded.
  virtual Range held() const = 0;
  // Copy the state of a sub-range of held() to and from host memory.
  virtual void read_state(StateTensor t, Range r, float* host) const = 0;
  virtual void write_state(StateTensor t, Range r, const float* host) = 0;
};

}  // namespace zt
