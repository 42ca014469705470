#include "zero/gather_coordinator.hpp"

#include <utility>

#include "comm/comm_volume.hpp"
#include "core/error.hpp"

namespace zt {

size_t GatherCoordinator::bytes_bound(const EngineOptions& o, const Partition& partition) {
  return std::min(o.max_live_parameters + o.prefetch_bucket_size, partition.padded()) *
         (sizeof(float) + dtype_size(o.dtype));
}

GatherCoordinator::GatherCoordinator(const StageContext& ctx, ParamShard& shard)
    : ctx_(ctx), shard_(shard), in_file_(shard.view().data == nullptr),
      staged_(in_file_ || (ctx.device().kind() != DeviceKind::Cpu && shard.view().space != MemSpace::Device)),
      host_(ctx.device(), MemSpace::Pinned),
      live_(ctx.layout.groups.size()), persistent_(ctx.layout.groups.size(), false) {
  ctx.group_gathers.assign(ctx.layout.groups.size(), 0);
  for (size_t g = 0; g < ctx.layout.groups.size(); ++g)
    persistent_[g] = ctx.layout.groups[g].size < ctx.options.param_persistence_threshold;
  if (in_file_) {
    size_t largest = 0;
    for (size_t g = 0; g < ctx.layout.groups.size(); ++g)
      largest = std::max(largest, group_range(int(g)).intersect(ctx.partition.own()).size());
    if (largest > ctx.options.offload_param.buffer_size)
      fail("zero_optimization.offload_param.buffer_size: {} elements is smaller than the largest piece of a "
           "parameter group this rank reads from its file ({} elements)",
           ctx.options.offload_param.buffer_size, largest);
  }
  if (!ctx.options.fetch_order.empty()) {
    trace_ = ctx.options.fetch_order;
    recording_ = false;
  }
}

GatherCoordinator::~GatherCoordinator() {
  for (size_t g = 0; g < live_.size(); ++g) {
    try {
      free_group(int(g));
    } catch (...) {  // a failed read or gather has nothing left to give
    }
  }
}

Range GatherCoordinator::group_range(int g) const {
  auto& group = ctx_.layout.groups[size_t(g)];
  return {group.offset, group.offset + group.size};
}

GatherCoordinator::Gathered& GatherCoordinator::start(int g) {
  Gathered& e = live_[size_t(g)];
  if (e.phase != Phase::Free) return e;
  const Range range = group_range(g);
  e.values = ctx_.pool.acquire(range.size() * dtype_size(ctx_.model_dtype));
  e.raw = ctx_.model_dtype != ctx_.dtype() ? ctx_.pool.acquire(range.size() * dtype_size(ctx_.dtype())) : nullptr;
  e.counts = ctx_.partition.pieces(range);
  e.phase = Phase::Reading;
  if (!persistent_[size_t(g)]) live_elements_ += range.size();
  const Range own = range.intersect(ctx_.partition.own());
  if (in_file_ && !own.empty()) {
    const size_t base = ctx_.partition.own().begin, esz = dtype_size(ctx_.dtype());
    void* place = static_cast<char*>(gather_buffer(e)) + (own.begin - range.begin) * esz;
    if (ctx_.device().kind() != DeviceKind::Cpu) place = e.staging = host_.acquire(own.size() * esz);
    e.read = shard_.read_async({own.begin - base, own.end - base}, place);
  }
  return e;
}

GatherCoordinator::Gathered& GatherCoordinator::issue(int g) {
  Gathered& e = start(g);
  if (e.phase != Phase::Reading) return e;
  const Range range = group_range(g), own = range.intersect(ctx_.partition.own());
  const size_t esz = dtype_size(ctx_.dtype());
  const void* send;
  if (staged_) {
    if (e.read_ahead) {
      --reading_;
      elements_reading_ -= own.size();
      e.read_ahead = false;
    }
    e.read.finish();
    void* place = static_cast<char*>(gather_buffer(e)) + (own.empty() ? 0 : own.begin - range.begin) * esz;
    Device& dev = ctx_.device();
    const void* from = e.staging;
    if (!in_file_ && !own.empty())  // a shard in host memory on a GPU
      from = static_cast<const char*>(shard_.view().data) + (own.begin - ctx_.partition.own().begin) * esz;
    if (from) {
      dev.copy(place, from, own.size() * esz, dev.compute());
      dev.synchronize(dev.compute());
      host_.release(std::exchange(e.staging, nullptr));
    }
    send = place;  // the piece is in its place: gather in place
  } else {
    const size_t at = own.empty() ? 0 : own.begin - ctx_.partition.own().begin;
    send = static_cast<const char*>(shard_.view().data) + at * esz;
  }
  // Without overlap the call itself blocks.
  ctx_.clock.time(&StepBreakdown::gather_wait, [&] {
    e.work = ctx_.comm.all_gather(send, gather_buffer(e), e.counts, ctx_.dtype(), ctx_.options.overlap_comm);
  });
  e.phase = Phase::Gathering;
  ++ctx_.group_gathers[size_t(g)];
  return e;
}

void GatherCoordinator::finish(Gathered& e) {
  if (e.phase == Phase::Ready) return;
  // The device waits for the gather, not the host (on the CPU backend, sync is wait).
  ctx_.clock.time(&StepBreakdown::gather_wait, [&] { e.work->sync(ctx_.device().compute()); });
  e.work.reset();
  if (e.raw) {
    const size_t n = total_count(e.counts);
    ctx_.vector().convert(ctx_.view(e.raw, ctx_.dtype()), ctx_.view(e.values, ctx_.model_dtype), n);
    ctx_.pool.release(std::exchange(e.raw, nullptr));
  }
  e.phase = Phase::Ready;
}

View GatherCoordinator::fetch(int g) {
  const bool persistent = persistent_[size_t(g)];  // gathered in refresh(), outside the trace
  if (!persistent) advance_trace(g);
  Gathered& e = persistent ? live_[size_t(g)] : issue(g);
  finish(e);
  ++e.refs;
  if (!persistent) {
    prefetch();
    read_ahead();
  }
  return {e.values, ctx_.model_dtype, MemSpace::Device};
}

void GatherCoordinator::release(int g) {
  Gathered& e = live_[size_t(g)];
  if (e.phase == Phase::Free || --e.refs > 0 || persistent_[size_t(g)]) return;
  if (!reused_soon(g)) free_group(g);
}

void GatherCoordinator::free_group(int g) {
  Gathered& e = live_[size_t(g)];
  if (e.phase == Phase::Free) return;
  const Range range = group_range(g);
  if (!persistent_[size_t(g)]) live_elements_ -= range.size();
  if (e.read_ahead) {
    --reading_;
    elements_reading_ -= range.intersect(ctx_.partition.own()).size();
  }
  Gathered gone = std::exchange(e, Gathered{});
  struct Release {  // the buffers go back to the pool, however the transfers ended
    BufferPool& pool;
    Gathered& e;
    ~Release() {
      pool.release(e.values);
      pool.release(e.raw);
    }
  } release{ctx_.pool, gone};
  struct ReleaseStaging {
    BufferPool& pool;
    Gathered& e;
    ~ReleaseStaging() { pool.release(e.staging); }
  } release_staging{host_, gone};
  gone.read.finish();
  if (gone.work) gone.work->sync(ctx_.device().compute());  // its buffers are next used in stream order
}

void GatherCoordinator::begin_micro_batch() {
  if (!trace_.empty()) recording_ = false;  // one micro-batch's fetch order is the trace
  pos_ = 0;
}

void GatherCoordinator::end_recording() {
  if (!trace_.empty()) recording_ = false;
}

void GatherCoordinator::advance_trace(int g) {
  if (recording_) {
    trace_.push_back(g);
    return;
  }
  for (size_t k = pos_; k < trace_.size(); ++k)
    if (trace_[k] == g) {
      pos_ = k + 1;
      return;
    }
}

// Gathers the next groups of the trace until stage3_prefetch_bucket_size elements are on the way;
// the last may overshoot it (as in DeepSpeed's coordinator), so a bucket smaller than a group
// still prefetches the next group. Prefetch never takes the live parameters past
// stage3_max_live_parameters (a fetch on demand may).
void GatherCoordinator::prefetch() {
  if (recording_) return;
  const EngineOptions& o = ctx_.options;
  size_t ahead = 0;
  for (size_t k = pos_; k < trace_.size() && ahead < o.prefetch_bucket_size; ++k) {
    const int h = trace_[k];
    const Gathered& e = live_[size_t(h)];
    if (persistent_[size_t(h)] || e.phase == Phase::Gathering || e.phase == Phase::Ready) continue;
    const size_t n = group_range(h).size();
    if (e.phase == Phase::Free && live_elements_ + n > o.max_live_parameters) break;
    issue(h);
    ahead += n;
  }
}

// Starts reading this rank's pieces of the groups the trace gathers next, while compute goes on;
// their all-gathers start in trace order when prefetch or a fetch reaches them.
void GatherCoordinator::read_ahead() {
  if (!in_file_ || recording_) return;
  const ParamOffload& o = ctx_.options.offload_param;
  for (size_t k = pos_; k < trace_.size() && reading_ < o.buffer_count; ++k) {
    const int h = trace_[k];
    if (persistent_[size_t(h)] || live_[size_t(h)].phase != Phase::Free) continue;
    const size_t n = group_range(h).size(), own = group_range(h).intersect(ctx_.partition.own()).size();
    if (elements_reading_ + own > o.max_in_cpu || live_elements_ + n > ctx_.options.max_live_parameters) break;
    if (own == 0) continue;
    start(h).read_ahead = true;
    ++reading_;
    elements_reading_ += own;
  }
}

void GatherCoordinator::stop_reading_ahead() {
  for (size_t g = 0; g < live_.size(); ++g)
    if (live_[g].phase == Phase::Reading) free_group(int(g));
}

// Whether a released group is used again within stage3_max_reuse_distance elements of gathers
// (and the live budget allows keeping it).
bool GatherCoordinator::reused_soon(int g) const {
  const EngineOptions& o = ctx_.options;
  if (recording_ || o.max_reuse_distance == 0) return false;
  if (live_elements_ > o.max_live_parameters) return false;
  size_t distance = 0;
  for (size_t k = pos_; k < trace_.size(); ++k) {
    if (trace_[k] == g) return distance <= o.max_reuse_distance;
    if (!persistent_[size_t(trace_[k])]) distance += group_range(trace_[k]).size();
  }
  return false;
}

void GatherCoordinator::refresh() {
  for (size_t g = 0; g < live_.size(); ++g) free_group(int(g));
  for (size_t g = 0; g < live_.size(); ++g)
    if (persistent_[g]) finish(issue(int(g)));
}

}  // namespace zt
