// The offloaded strategy of the shard optimizer (ZeRO-Offload, ZeRO-Infinity): the state in host
// memory or a file (offloaded_state.hpp), updated sub-group by sub-group by the host's AdamW, its
// gradients and parameters staged in host memory.
#include <algorithm>
#include <cstring>

#include "zero/offloaded_state.hpp"
#include "zero/shard_optimizer.hpp"

namespace zt {

namespace {

constexpr int kGradStages = 2;  // one sub-group's gradients arrive while another's update
// Offloaded sub-groups are whole multiples of this many elements, so that their records and
// parameter pieces start on 4 KiB boundaries of their files (direct I/O).
constexpr size_t kSubGroupQuantum = 4096;

// Elements of a sub-group: sub_group_size rounded up to the quantum.
size_t sub_group_elements(const OptimizerOffload& off, size_t shard) {
  const size_t wanted = std::min(std::max<size_t>(1, off.sub_group_size), std::max<size_t>(1, shard));
  return (wanted + kSubGroupQuantum - 1) / kSubGroupQuantum * kSubGroupQuantum;
}

std::unique_ptr<OffloadedState> make_state(const ShardOptimizer::Parts& p) {
  const OptimizerOffload& off = p.options.offload_optimizer;
  const size_t n = p.range.size(), sub = sub_group_elements(off, n);
  Device& dev = p.backend.device;
  if (off.device == OffloadDevice::Nvme)
    return make_file_state(n, sub, off.buffer_count, off.nvme_path, p.options.rank, p.options.aio);
  if (off.device == OffloadDevice::None && dev.kind() == DeviceKind::Cpu)
    return make_memory_state(n, sub, dev, MemSpace::Device);  // only the parameters live in a file
  // offload_optimizer cpu, or parameters in a file on a GPU: the host AdamW cannot reach a GPU's
  // memory, so the state waits in host memory.
  return make_memory_state(n, sub, dev, off.pin_memory ? MemSpace::Pinned : MemSpace::Host);
}

class OffloadedOptimizer final : public ShardOptimizer {
public:
  explicit OffloadedOptimizer(const Parts& p)
      : ShardOptimizer(p), device_(p.backend.device), host_(p.host), clock_(p.clock), state_(make_state(p)) {
    const size_t sub_elements = state_->sub_groups() ? state_->sub_group(0).size() : 0;
    const size_t bytes = sub_elements * dtype_size(dtype_);
    const MemSpace staging = p.options.offload_optimizer.pin_memory ? MemSpace::Pinned : MemSpace::Host;
    for (auto& g : grad_stage_) g = Buffer<uint8_t>(device_, staging, MemCategory::Buffers, bytes, Init::Uninitialised);
    param_stage_ = Buffer<uint8_t>(device_, staging, MemCategory::Buffers, bytes, Init::Uninitialised);
    size_t kept = 0;
    for (const KeptPiece& k : kept_)
      kept = std::max(kept, std::min(sub_elements, k.segments.back().offset + k.segments.back().size));
    if (kept) kept_stage_ = Buffer<float>(device_, staging, MemCategory::Buffers, kept, Init::Uninitialised);
  }

  void init_master() override {
    for_each_sub_group({0, range_.size()}, true, [&](Range sub, Range, AdamState st) {
      params_.read(sub, param_stage_.data());
      host_.convert(staged_params(), {st.master, DType::F32, MemSpace::Host}, sub.size());
      std::memset(st.m, 0, sub.size() * sizeof(float));
      std::memset(st.v, 0, sub.size() * sizeof(float));
    });
  }

  // The host AdamW needs the factor on the host: the offloaded step waits for the device here.
  void update(ConstView grads, const float* kept_grads, const GradNorm* norm, const AdamWHyper& hyper,
              int64_t step) override {
    GradNorm host{};
    device_.copy(&host, norm, sizeof host, device_.compute());
    if (!host.skip) update_on_host(grads, kept_grads, host.grad_factor, hyper, step);
  }

  void read(StateTensor t, Range r, float* host) override {
    const Range rel = relative(r);
    for_each_sub_group(rel, false, [&](Range, Range piece, AdamState st) {
      std::memcpy(host + (piece.begin - rel.begin), tensor(st, t), piece.size() * sizeof(float));
    });
  }

  void write(StateTensor t, Range r, const float* host) override {
    const Range rel = relative(r);
    for_each_sub_group(rel, true, [&](Range, Range piece, AdamState st) {
      std::memcpy(tensor(st, t), host + (piece.begin - rel.begin), piece.size() * sizeof(float));
    });
  }

  void round_params() override {
    for_each_sub_group({0, range_.size()}, false, [&](Range sub, Range, AdamState st) {
      host_.convert({st.master, DType::F32, MemSpace::Host}, staged_params(), sub.size());
      params_.write(sub, param_stage_.data());
    });
  }

private:
  // Sub-group by sub-group with the host's AdamW: grad = float(grads[i]) * grad_factor.
  void update_on_host(ConstView grads, const float* kept_grads, float grad_factor, const AdamWHyper& hyper,
                      int64_t step);
  // The kept tensors' pieces in sub-group `sub` (relative to update_range().begin), after its other
  // segments: their gradients through kept_stage_.
  void update_kept(Range sub, AdamState st, const float* kept_grads, float grad_factor, const AdamWHyper& hyper,
                   int64_t step);
  static float* tensor(AdamState st, StateTensor t) {
    return t == StateTensor::Master ? st.master : t == StateTensor::AdamM ? st.m : st.v;
  }
  View staged_params() { return {param_stage_.data(), dtype_, MemSpace::Host}; }
  // Segments (relative to `base`) within `sub`, with offsets relative to sub.begin; their pieces in it.
  static std::vector<AdamSegment> segments_in(const std::vector<AdamSegment>& segments, Range sub, size_t base = 0) {
    std::vector<AdamSegment> out;
    for (const AdamSegment& s : segments) {
      const Range piece = sub.intersect({base + s.offset, base + s.offset + s.size});
      if (!piece.empty()) out.push_back({piece.begin - sub.begin, piece.size(), s.decay});
    }
    return out;
  }
  // The state of relative range r, one sub-group at a time: f(sub-group, r ∩ it, state pointers at r ∩ it).
  template <typename F>
  void for_each_sub_group(Range r, bool changes, F&& f) {
    for (size_t k = 0; k < state_->sub_groups(); ++k) {
      const Range sub = state_->sub_group(k);
      const Range piece = sub.intersect(r);
      if (piece.empty()) continue;
      AdamState st = state_->acquire(k);
      const size_t at = piece.begin - sub.begin;
      f(sub, piece, AdamState{st.master + at, st.m + at, st.v + at});
      state_->release(k, changes);
    }
    state_->flush();
  }

  Device& device_;
  VectorOps& host_;
  StepClock& clock_;
  std::unique_ptr<OffloadedState> state_;
  Buffer<uint8_t> grad_stage_[kGradStages], param_stage_;  // a sub-group's gradients (two), its parameters
  Buffer<float> kept_stage_;                               // a kept tensor's gradients in a sub-group
  Event grads_arrived_[kGradStages];
  Event grads_final_;  // the gradients are complete on the compute stream
};

// Sub-group k: its gradients came to the host while k-1 was updated; the host AdamW updates its
// state and writes the parameters into the staging buffer, which go back to where the parameters
// live; the file's reads run ahead (prefetch) and its writes behind (release).
void OffloadedOptimizer::update_on_host(ConstView grads, const float* kept_grads, float grad_factor,
                                        const AdamWHyper& hyper, int64_t step) {
  Device& dev = device_;
  const size_t groups = state_->sub_groups(), gsz = dtype_size(grads.dtype);
  const double io_before = state_->io_seconds();
  constexpr StepClock::Part kWaited = &StepBreakdown::offload_wait;
  auto fetch_grads = [&](size_t k) {
    const Range sub = state_->sub_group(k);
    dev.copy(grad_stage_[k % 2].data(), grads.at(sub.begin).data, sub.size() * gsz, dev.copies());
    dev.record(grads_arrived_[k % 2], dev.copies());
  };
  for (auto& e : grads_arrived_)
    if (!e.handle) e = dev.create_event();
  if (!grads_final_.handle) grads_final_ = dev.create_event();
  // The copies stream reads what the compute stream's reductions wrote.
  dev.record(grads_final_, dev.compute());
  dev.wait(dev.copies(), grads_final_);
  if (groups > 0) fetch_grads(0);
  for (size_t k = 0; k < groups; ++k) {
    const Range sub = state_->sub_group(k);
    AdamState st;
    clock_.time(kWaited, [&] {
      st = state_->acquire(k);
      // The next sub-groups' state is read while this one is updated, as far as buffers allow.
      for (size_t next = k + 1; next < groups && state_->prefetch(next); ++next) {
      }
      dev.synchronize(grads_arrived_[k % 2]);
    });
    if (k + 1 < groups) fetch_grads(k + 1);
    const std::vector<AdamSegment> segments = segments_in(segments_, sub);
    const View staged = staged_params();
    host_.adamw(segments, st, {grad_stage_[k % 2].data(), grads.dtype, MemSpace::Host}, grad_factor, staged, hyper,
                step);
    // Padding past the last tensor is never updated: its parameters keep the master's value (zero).
    const size_t covered = segments.empty() ? 0 : segments.back().offset + segments.back().size;
    if (covered < sub.size())
      host_.convert({st.master + covered, DType::F32, MemSpace::Host}, staged.at(covered), sub.size() - covered);
    update_kept(sub, st, kept_grads, grad_factor, hyper, step);
    clock_.time(kWaited, [&] { params_.write(sub, param_stage_.data()); });
    state_->release(k, true);
  }
  clock_.time(kWaited, [&] { state_->flush(); });
  clock_.add(&StepBreakdown::offload_io, state_->io_seconds() - io_before);  // every read and write is done
}

void OffloadedOptimizer::update_kept(Range sub, AdamState st, const float* kept_grads, float grad_factor,
                                     const AdamWHyper& hyper, int64_t step) {
  for (const KeptPiece& k : kept_) {
    const Range piece = sub.intersect({k.offset, k.offset + k.segments.back().offset + k.segments.back().size});
    if (piece.empty()) continue;
    const size_t in_sub = piece.begin - sub.begin;
    device_.copy(kept_stage_.data(), kept_grads + k.grad + (piece.begin - k.offset), piece.size() * sizeof(float),
                 device_.compute());
    device_.synchronize(device_.compute());
    host_.adamw(segments_in(k.segments, piece, k.offset), {st.master + in_sub, st.m + in_sub, st.v + in_sub},
                {kept_stage_.data(), DType::F32, MemSpace::Host}, grad_factor, staged_params().at(in_sub), hyper, step);
  }
}

}  // namespace

size_t ShardOptimizer::staging_bytes(const EngineOptions& options, size_t shard) {
  const bool params_in_file = options.stage == 3 && options.offload_param.device == OffloadDevice::Nvme;
  if (options.offload_optimizer.device == OffloadDevice::None && !params_in_file) return 0;
  const size_t elements = std::min(sub_group_elements(options.offload_optimizer, shard), shard);
  return (kGradStages + 1) * elements * dtype_size(options.dtype);
}

FileStateBytes ShardOptimizer::file_state_bytes(const EngineOptions& options, size_t shard) {
  const OptimizerOffload& off = options.offload_optimizer;
  if (off.device != OffloadDevice::Nvme) return {};
  return zt::file_state_bytes(shard, sub_group_elements(off, shard), off.buffer_count);
}

std::unique_ptr<ShardOptimizer> make_offloaded_optimizer(const ShardOptimizer::Parts& parts) {
  return std::make_unique<OffloadedOptimizer>(parts);
}

}  // namespace zt
