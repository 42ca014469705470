#include "zero/shard_optimizer.hpp"

#include <algorithm>
#include <cstring>

#include "core/clock.hpp"
#include "core/error.hpp"

namespace zt {

namespace {
// Segments of at most this many elements: the unit of parallel work on the CPU.
constexpr size_t kChunk = 16384;
// Offloaded sub-groups are whole multiples of this many elements, so that their records and
// parameter pieces start on 4 KiB boundaries of their files (direct I/O).
constexpr size_t kSubGroupQuantum = 4096;

// Elements of a sub-group: sub_group_size rounded up to the quantum.
size_t sub_group_elements(const OptimizerOffload& off, size_t shard) {
  const size_t wanted = std::min(std::max<size_t>(1, off.sub_group_size), std::max<size_t>(1, shard));
  return (wanted + kSubGroupQuantum - 1) / kSubGroupQuantum * kSubGroupQuantum;
}
}  // namespace

size_t ShardOptimizer::staging_bytes(const EngineOptions& options, size_t shard) {
  const bool params_in_file = options.stage == 3 && options.offload_param.device == OffloadDevice::Nvme;
  if (options.offload_optimizer.device == OffloadDevice::None && !params_in_file) return 0;
  const size_t elements = std::min(sub_group_elements(options.offload_optimizer, shard), shard);
  return (kGradStages + 1) * elements * dtype_size(options.dtype);
}

ShardOptimizer::ShardOptimizer(const ParamLayout& layout, Range range, const EngineOptions& options,
                               const Backend& backend, ParamShard& params)
    : range_(range), dtype_(options.dtype), backend_(backend), params_(params) {
  for (auto& g : layout.groups)
    for (auto& t : g.tensors) {
      Range piece = range.intersect({t.offset, t.offset + t.numel()});
      for (size_t a = piece.begin; a < piece.end; a += kChunk)
        segments_.push_back({a - range.begin, std::min(kChunk, piece.end - a), t.weight_decay});
    }
  const OptimizerOffload& off = options.offload_optimizer;
  const bool resident = off.device == OffloadDevice::None && params.view().data;
  Device& dev = backend.device;
  if (resident) {
    if (dtype_ != DType::F32) master_ = Buffer<float>(dev, MemSpace::Device, MemCategory::Optimizer, range.size());
    m_ = Buffer<float>(dev, MemSpace::Device, MemCategory::Optimizer, range.size());
    v_ = Buffer<float>(dev, MemSpace::Device, MemCategory::Optimizer, range.size());
    return;
  }
  const size_t sub = sub_group_elements(off, range.size());
  if (off.device == OffloadDevice::Nvme)
    offloaded_ = make_file_state(range.size(), sub, off.buffer_count, off.nvme_path, options.rank, options.aio);
  else if (off.device == OffloadDevice::Cpu)
    offloaded_ = make_memory_state(range.size(), sub, dev, off.pin_memory ? MemSpace::Pinned : MemSpace::Host);
  else if (dev.kind() == DeviceKind::Cpu)  // the state stays in device memory; only the parameters live in a file
    offloaded_ = make_memory_state(range.size(), sub, dev, MemSpace::Device);
  else  // the host AdamW below cannot reach a GPU's memory: the state waits in host memory
    offloaded_ = make_memory_state(range.size(), sub, dev, off.pin_memory ? MemSpace::Pinned : MemSpace::Host);
  const size_t sub_elements = offloaded_->sub_groups() ? offloaded_->sub_group(0).size() : 0;
  const MemSpace staging = off.pin_memory ? MemSpace::Pinned : MemSpace::Host;
  for (auto& g : grad_stage_)
    g = Buffer<uint8_t>(dev, staging, MemCategory::Buffers, sub_elements * dtype_size(dtype_), Init::Uninitialised);
  param_stage_ = Buffer<uint8_t>(dev, staging, MemCategory::Buffers, sub_elements * dtype_size(dtype_), Init::Uninitialised);
}

float* ShardOptimizer::resident(StateTensor t) {
  switch (t) {
    case StateTensor::AdamM: return m_.data();
    case StateTensor::AdamV: return v_.data();
    case StateTensor::Master: break;
  }
  return dtype_ == DType::F32 ? static_cast<float*>(params_.view().data) : master_.data();
}

std::vector<AdamSegment> ShardOptimizer::segments_in(Range sub) const {
  std::vector<AdamSegment> out;
  for (const AdamSegment& s : segments_) {
    const Range piece = sub.intersect({s.offset, s.offset + s.size});
    if (!piece.empty()) out.push_back({piece.begin - sub.begin, piece.size(), s.decay});
  }
  return out;
}

template <typename F>
void ShardOptimizer::for_each_sub_group(Range r, bool changes, F&& f) {
  for (size_t k = 0; k < offloaded_->sub_groups(); ++k) {
    const Range sub = offloaded_->sub_group(k);
    const Range piece = sub.intersect(r);
    if (piece.empty()) continue;
    AdamState st = offloaded_->acquire(k);
    const size_t at = piece.begin - sub.begin;
    f(sub, piece, AdamState{st.master + at, st.m + at, st.v + at});
    offloaded_->release(k, changes);
  }
  offloaded_->flush();
}

void ShardOptimizer::init_master() {
  const size_t n = range_.size();
  if (!offloaded_) {
    if (dtype_ != DType::F32)
      backend_.vector.convert(params_.view(), {master_.data(), DType::F32, MemSpace::Device}, n);
    return;
  }
  VectorOps& host = cpu_backend().vector;
  for_each_sub_group({0, n}, true, [&](Range sub, Range, AdamState st) {
    params_.read(sub, param_stage_.data());
    host.convert({param_stage_.data(), dtype_, MemSpace::Host}, {st.master, DType::F32, MemSpace::Host}, sub.size());
    std::memset(st.m, 0, sub.size() * sizeof(float));
    std::memset(st.v, 0, sub.size() * sizeof(float));
  });
}

void ShardOptimizer::update(ConstView grads, float grad_factor, const AdamWHyper& hyper, int64_t step) {
  if (offloaded_) return update_offloaded(grads, grad_factor, hyper, step);
  float* w = resident(StateTensor::Master);
  backend_.vector.adamw(segments_, {w, m_.data(), v_.data()}, grads, grad_factor, params_.view(), hyper, step);
}

void ShardOptimizer::update(ConstView grads, const GradNorm* norm, const AdamWHyper& hyper, int64_t step) {
  if (!offloaded_) {
    float* w = resident(StateTensor::Master);
    backend_.vector.adamw(segments_, {w, m_.data(), v_.data()}, grads, norm, params_.view(), hyper, step);
    return;
  }
  // The host AdamW needs the factor on the host: the offloaded step waits for the device here.
  Device& dev = backend_.device;
  GradNorm host{};
  dev.copy(&host, norm, sizeof host, dev.compute());
  if (!host.skip) update_offloaded(grads, host.grad_factor, hyper, step);
}

// Sub-group k: its gradients came to the host while k-1 was updated; the host AdamW updates its
// state and writes the parameters into the staging buffer, which go back to where the parameters
// live; the file's reads run ahead (prefetch) and its writes behind (release).
void ShardOptimizer::update_offloaded(ConstView grads, float grad_factor, const AdamWHyper& hyper, int64_t step) {
  Device& dev = backend_.device;
  VectorOps& host = cpu_backend().vector;
  const size_t groups = offloaded_->sub_groups(), gsz = dtype_size(grads.dtype);
  auto fetch_grads = [&](size_t k) {
    const Range sub = offloaded_->sub_group(k);
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
    const Range sub = offloaded_->sub_group(k);
    AdamState st;
    timed(waited_s_, [&] {
      st = offloaded_->acquire(k);
      // The next sub-groups' state is read while this one is updated, as far as buffers allow.
      for (size_t next = k + 1; next < groups && offloaded_->prefetch(next); ++next) {
      }
      dev.synchronize(grads_arrived_[k % 2]);
    });
    if (k + 1 < groups) fetch_grads(k + 1);
    const std::vector<AdamSegment> segments = segments_in(sub);
    const View staged{param_stage_.data(), dtype_, MemSpace::Host};
    host.adamw(segments, st, {grad_stage_[k % 2].data(), grads.dtype, MemSpace::Host}, grad_factor, staged, hyper,
               step);
    // Padding past the last tensor is never updated: its parameters keep the master's value (zero).
    const size_t covered = segments.empty() ? 0 : segments.back().offset + segments.back().size;
    if (covered < sub.size())
      host.convert({st.master + covered, DType::F32, MemSpace::Host}, staged.at(covered), sub.size() - covered);
    timed(waited_s_, [&] { params_.write(sub, param_stage_.data()); });
    offloaded_->release(k, true);
  }
  timed(waited_s_, [&] { offloaded_->flush(); });
}

ShardOptimizer::OffloadTiming ShardOptimizer::timing() const {
  if (!offloaded_) return {};
  return {waited_s_, offloaded_->io_seconds() - io_at_reset_s_};
}

void ShardOptimizer::reset_timing() {
  waited_s_ = 0;
  io_at_reset_s_ = offloaded_ ? offloaded_->io_seconds() : 0;
}

void ShardOptimizer::read(StateTensor t, Range r, float* host) {
  const Range rel{r.begin - range_.begin, r.end - range_.begin};
  if (!offloaded_) {
    Device& dev = backend_.device;
    dev.copy(host, resident(t) + rel.begin, rel.size() * sizeof(float), dev.compute());
    dev.synchronize(dev.compute());
    return;
  }
  for_each_sub_group(rel, false, [&](Range, Range piece, AdamState st) {
    const float* src = t == StateTensor::Master ? st.master : t == StateTensor::AdamM ? st.m : st.v;
    std::memcpy(host + (piece.begin - rel.begin), src, piece.size() * sizeof(float));
  });
}

void ShardOptimizer::write(StateTensor t, Range r, const float* host) {
  const Range rel{r.begin - range_.begin, r.end - range_.begin};
  if (!offloaded_) {
    Device& dev = backend_.device;
    dev.copy(resident(t) + rel.begin, host, rel.size() * sizeof(float), dev.compute());
    dev.synchronize(dev.compute());
    return;
  }
  for_each_sub_group(rel, true, [&](Range, Range piece, AdamState st) {
    float* dst = t == StateTensor::Master ? st.master : t == StateTensor::AdamM ? st.m : st.v;
    std::memcpy(dst, host + (piece.begin - rel.begin), piece.size() * sizeof(float));
  });
}

void ShardOptimizer::round_params() {
  if (!offloaded_) {
    if (dtype_ != DType::F32)
      backend_.vector.convert({master_.data(), DType::F32, MemSpace::Device}, params_.view(), range_.size());
    return;
  }
  VectorOps& host = cpu_backend().vector;
  for_each_sub_group({0, range_.size()}, false, [&](Range sub, Range, AdamState st) {
    host.convert({st.master, DType::F32, MemSpace::Host}, {param_stage_.data(), dtype_, MemSpace::Host}, sub.size());
    params_.write(sub, param_stage_.data());
  });
}

}  // namespace zt
