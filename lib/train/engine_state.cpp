#include "train/engine_state.hpp"

namespace zt {

namespace {

StateTensor engine_tensor(ShardTensor t) {
  switch (t) {
    case ShardTensor::AdamM: return StateTensor::AdamM;
    case ShardTensor::AdamV: return StateTensor::AdamV;
    case ShardTensor::Master: break;
  }
  return StateTensor::Master;
}

Range engine_range(ElementRange r) { return {size_t(r.begin), size_t(r.end)}; }

}  // namespace

ElementRange EngineState::held() const {
  const Range r = engine_.state_range();
  return {r.begin, r.end};
}

void EngineState::read(ShardTensor t, ElementRange r, float* host) {
  engine_.read_state(engine_tensor(t), engine_range(r), host);
}

void EngineState::write(ShardTensor t, ElementRange r, const float* host) {
  engine_.write_state(engine_tensor(t), engine_range(r), host);
}

std::vector<ElementRange> checkpoint_pieces(const Partition& partition) {
  std::vector<ElementRange> pieces;
  for (int r = 0; r < partition.world_size(); ++r) {
    const Range t = partition.trained(r);
    pieces.push_back({t.begin, t.end});
  }
  return pieces;
}

}  // namespace zt
