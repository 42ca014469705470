#include "train/whole_state.hpp"

#include <algorithm>
#include <set>

#include "core/error.hpp"

namespace zt {

WholeState::WholeState(Engine& engine, const Gpt& model, Communicator& comm)
    : engine_(engine),
      device_(model.device()),
      map_(model.layout_map()),
      comm_(comm),
      partition_(TrainableSpace(model.whole_layout()).numel(), comm.world_size(), comm.rank()) {}

void WholeState::gather(bool master_only) {
  if (!map_) return;
  Device& dev = device_;
  const size_t T = numel();
  std::vector<size_t> counts;  // each rank's piece, padding left out
  for (int r = 0; r < partition_.world_size(); ++r) counts.push_back(partition_.trained(r).size());
  const size_t own = counts[size_t(comm_.rank())];
  Buffer<float> whole(dev, MemSpace::Device, MemCategory::Buffers, T, Init::Uninitialised);
  Buffer<float> mine(dev, MemSpace::Device, MemCategory::Buffers, std::max<size_t>(1, own), Init::Uninitialised);
  std::vector<float> host(T), piece;
  for (size_t k = 0; k < 3; ++k) {
    const StateTensor t = kStateTensors[k];
    gathered_[k].clear();
    if (master_only && t != StateTensor::Master) continue;
    std::fill(host.begin(), host.end(), 0.0f);
    for (int d = 0; d < engine_.domains(); ++d) {  // what this rank updates of each domain, in its place
      const Partition& p = engine_.train_partition(d);
      const Range updated = p.trained(p.rank());
      if (updated.empty()) continue;
      piece.resize(updated.size());
      engine_.read_state(d, t, updated, piece.data());
      for (const LayoutMap::Piece& m : map_->compact(d, updated))
        std::copy_n(piece.data() + (m.from - updated.begin), m.size, host.data() + m.to);
    }
    dev.copy(whole.data(), host.data(), T * sizeof(float), dev.compute());
    comm_.reduce_scatter(whole.data(), mine.data(), counts, DType::F32, ReduceOp::Sum)->wait();
    gathered_[k].resize(own);
    dev.copy(gathered_[k].data(), mine.data(), own * sizeof(float), dev.compute());
    dev.synchronize(dev.compute());
  }
}

Range WholeState::held() const { return map_ ? partition_.trained(comm_.rank()) : engine_.held(); }

void WholeState::read_state(StateTensor t, Range r, float* host) const {
  if (!map_) return engine_.read_state(t, r, host);
  const Range held = this->held();
  const std::vector<float>& from = gathered_[size_t(t)];
  if (r.intersect(held).size() != r.size() || from.size() != held.size())
    fail("WholeState::read_state: elements [{}, {}) are not gathered here", r.begin, r.end);
  std::copy_n(from.data() + (r.begin - held.begin), r.size(), host);
}

void WholeState::write_state(StateTensor t, Range r, const float* host) {
  if (map_) fail("WholeState::write_state: an expert-parallel engine's state is written by load()");
  engine_.write_state(t, r, host);
}

void WholeState::load(const CheckpointReader& checkpoint, bool weights_only) const {
  if (!map_) return load_state(checkpoint, engine_, weights_only, comm_.rank(), comm_.world_size());
  std::set<size_t> to_verify;
  for (int d = 0; d < engine_.domains(); ++d)
    for (const LayoutMap::Piece& m : map_->compact(d, engine_.held(d)))
      for (size_t i : checkpoint.shards_in({m.to, m.to + m.size})) to_verify.insert(i);
  for (size_t i : to_verify) checkpoint.verify(i);
  std::vector<float> buffer;
  for (int d = 0; d < engine_.domains(); ++d)
    for (const LayoutMap::Piece& m : map_->compact(d, engine_.held(d))) {
      buffer.resize(m.size);
      for (StateTensor t : kStateTensors) {
        if (weights_only && t != StateTensor::Master) continue;
        checkpoint.read(t, {m.to, m.to + m.size}, buffer.data());
        engine_.write_state(d, t, {m.from, m.from + m.size}, buffer.data());
      }
    }
}

}  // namespace zt
