#include "train/whole_state.hpp"

#include <algorithm>
#include <set>

#include "core/error.hpp"

namespace zt {

WholeState::WholeState(Engine& engine, const Gpt& model, Communicator& comm, size_t chunk)
    : engine_(engine),
      device_(model.device()),
      map_(model.layout_map()),
      comm_(comm),
      partition_(TrainableSpace(model.whole_layout()).numel(), comm.world_size(), comm.rank()),
      chunk_(chunk) {}

void WholeState::gather(bool master_only) {
  if (!map_) return;
  Device& dev = device_;
  const size_t T = numel();
  const Range held = this->held();
  const size_t kChunk = chunk_;
  Buffer<float> chunk(dev, MemSpace::Device, MemCategory::Buffers, std::min(T, kChunk), Init::Uninitialised);
  Buffer<float> mine(dev, MemSpace::Device, MemCategory::Buffers, std::max<size_t>(1, std::min(held.size(), kChunk)),
                     Init::Uninitialised);
  std::vector<float> host(std::min(T, kChunk));
  std::vector<size_t> counts(size_t(partition_.world_size()));
  // What this rank updates of each domain, and where its pieces lie in the whole space.
  std::vector<float> updated[2];
  std::vector<std::pair<int, LayoutMap::Piece>> pieces;
  for (int d = 0; d < engine_.domains(); ++d) {
    const Partition& p = engine_.train_partition(d);
    for (LayoutMap::Piece m : map_->compact(d, p.trained(p.rank()))) {
      m.from -= p.trained(p.rank()).begin;  // an offset into updated[d]
      pieces.push_back({d, m});
    }
  }
  for (size_t k = 0; k < 3; ++k) {
    const StateTensor t = kStateTensors[k];
    gathered_[k].clear();
    if (master_only && t != StateTensor::Master) continue;
    for (int d = 0; d < engine_.domains(); ++d) {
      const Partition& p = engine_.train_partition(d);
      const Range own = p.trained(p.rank());
      updated[d].resize(own.size());
      if (!own.empty()) engine_.read_state(d, t, own, updated[d].data());
    }
    gathered_[k].resize(held.size());
    // Chunk by chunk: each element from the one rank that updates it, zeros from the others.
    for (size_t first = 0; first < T; first += kChunk) {
      const Range range{first, std::min(T, first + kChunk)};
      std::fill(host.begin(), host.end(), 0.0f);
      for (const auto& [d, m] : pieces) {
        const Range to = range.intersect({m.to, m.to + m.size});
        if (!to.empty())
          std::copy_n(updated[d].data() + m.from + (to.begin - m.to), to.size(), host.data() + (to.begin - first));
      }
      for (int r = 0; r < partition_.world_size(); ++r)
        counts[size_t(r)] = partition_.trained(r).intersect(range).size();
      dev.copy(chunk.data(), host.data(), range.size() * sizeof(float), dev.compute());
      comm_.reduce_scatter(chunk.data(), mine.data(), counts, DType::F32, ReduceOp::Sum)->wait();
      const Range got = held.intersect(range);
      if (!got.empty())
        dev.copy(gathered_[k].data() + (got.begin - held.begin), mine.data(), got.size() * sizeof(float),
                 dev.compute());
      dev.synchronize(dev.compute());
    }
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
