#include "zero/gather_coordinator.hpp"

#include <utility>

#include "comm/comm_volume.hpp"
#include "core/error.hpp"
#include "core/clock.hpp"

namespace zt {

GatherCoordinator::GatherCoordinator(const StageContext& ctx, ParamShard& shard, StageTimers& timers)
    : ctx_(ctx), shard_(shard), in_file_(shard.view().data == nullptr), ahead_(ctx.layout.groups.size()),
      timers_(timers), live_(ctx.layout.groups.size()), persistent_(ctx.layout.groups.size(), false),
      gathers_(ctx.layout.groups.size(), 0) {
  if (in_file_) {
    size_t largest = 0;
    for (size_t g = 0; g < ctx.layout.groups.size(); ++g) largest = std::max(largest, own_part(int(g)).size());
    if (largest > ctx.options.offload_param.buffer_size)
      fail("zero_optimization.offload_param.buffer_size: {} elements is smaller than the largest piece of a "
           "parameter group this rank reads from its file ({} elements)",
           ctx.options.offload_param.buffer_size, largest);
  }
  for (size_t g = 0; g < ctx.layout.groups.size(); ++g)
    persistent_[g] = ctx.layout.groups[g].size < ctx.options.param_persistence_threshold;
  if (!ctx.options.fetch_order.empty()) {
    trace_ = ctx.options.fetch_order;
    recording_ = false;
  }
}

GatherCoordinator::~GatherCoordinator() {
  try {
    stop_reading_ahead();
  } catch (...) {  // a failed read has nothing left to give
  }
  for (size_t g = 0; g < live_.size(); ++g) free_group(int(g));
}

Range GatherCoordinator::group_range(int g) const {
  auto& group = ctx_.layout.groups[size_t(g)];
  return {group.offset, group.offset + group.size};
}

Range GatherCoordinator::own_part(int g) const {
  const Range own = group_range(g).intersect(ctx_.partition.own());
  const size_t base = ctx_.partition.own().begin;
  return own.empty() ? Range{} : Range{own.begin - base, own.end - base};
}

const void* GatherCoordinator::own_piece(int g, Gathered& e) {
  const Range part = own_part(g);
  if (!in_file_) return static_cast<const char*>(shard_.view().data) + part.begin * dtype_size(ctx_.dtype());
  if (part.empty()) return nullptr;
  ReadAhead& a = ahead_[size_t(g)];
  if (a.piece) {  // read ahead: wait for it
    e.piece = std::exchange(a.piece, nullptr);
    --reads_in_flight_;
    elements_read_ahead_ -= part.size();
    a.read.finish();
  } else {
    e.piece = ctx_.pool.acquire(part.size() * dtype_size(ctx_.dtype()));
    shard_.read(part, e.piece);
  }
  return e.piece;
}

// Starts reading this rank's pieces of the groups the trace gathers next, while compute goes on.
void GatherCoordinator::read_ahead() {
  if (!in_file_ || recording_) return;
  const ParamOffload& o = ctx_.options.offload_param;
  for (size_t k = pos_; k < trace_.size() && reads_in_flight_ < o.buffer_count; ++k) {
    const int h = trace_[k];
    const Range part = own_part(h);
    if (persistent_[size_t(h)] || live_[size_t(h)].live || ahead_[size_t(h)].piece || part.empty()) continue;
    if (elements_read_ahead_ + part.size() > o.max_in_cpu) break;
    ReadAhead& a = ahead_[size_t(h)];
    a.piece = ctx_.pool.acquire(part.size() * dtype_size(ctx_.dtype()));
    a.read = shard_.read_async(part, a.piece);
    ++reads_in_flight_;
    elements_read_ahead_ += part.size();
  }
}

void GatherCoordinator::stop_reading_ahead() {
  for (ReadAhead& a : ahead_)
    if (a.piece) {
      void* piece = std::exchange(a.piece, nullptr);
      try {
        a.read.finish();
      } catch (...) {
        ctx_.pool.release(piece);
        throw;
      }
      ctx_.pool.release(piece);
    }
  reads_in_flight_ = 0;
  elements_read_ahead_ = 0;
}

GatherCoordinator::Gathered& GatherCoordinator::issue(int g) {
  Gathered& e = live_[size_t(g)];
  if (e.live) return e;
  const Range range = group_range(g);
  const bool convert = ctx_.model_dtype != ctx_.dtype();
  e.values = ctx_.pool.acquire(range.size() * dtype_size(ctx_.model_dtype));
  e.raw = convert ? ctx_.pool.acquire(range.size() * dtype_size(ctx_.dtype())) : nullptr;
  e.counts = ctx_.partition.pieces(range);
  e.live = true;
  e.ready = false;
  auto t0 = SteadyClock::now();  // without overlap the call itself blocks
  e.work = ctx_.comm.all_gather(own_piece(g, e), convert ? e.raw : e.values, e.counts, ctx_.dtype(),
                                ctx_.options.overlap_comm);
  timers_.gather_wait_s += seconds_since(t0);
  live_elements_ += range.size();
  ++gathers_[size_t(g)];
  return e;
}

void GatherCoordinator::finish(Gathered& e) {
  if (e.work) {
    auto t0 = SteadyClock::now();
    e.work->wait();
    timers_.gather_wait_s += seconds_since(t0);
    e.work.reset();
  }
  if (e.ready) return;
  if (e.raw) {
    const size_t n = total_count(e.counts);
    ctx_.vector().convert(ctx_.view(e.raw, ctx_.dtype()), ctx_.view(e.values, ctx_.model_dtype), n);
    ctx_.pool.release(e.raw);
    e.raw = nullptr;
  }
  ctx_.pool.release(std::exchange(e.piece, nullptr));  // sent: the piece read from the file is done with
  e.ready = true;
}

ConstView GatherCoordinator::fetch(int g) {
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
  if (!e.live || --e.refs > 0 || persistent_[size_t(g)]) return;
  if (!reused_soon(g)) free_group(g);
}

void GatherCoordinator::free_group(int g) {
  Gathered& e = live_[size_t(g)];
  if (!e.live) return;
  if (e.work) e.work->wait();  // the buffers must outlive the transfer
  if (!persistent_[size_t(g)]) live_elements_ -= group_range(g).size();
  ctx_.pool.release(e.values);
  ctx_.pool.release(e.raw);
  ctx_.pool.release(e.piece);
  e = Gathered{};
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
    if (persistent_[size_t(h)] || live_[size_t(h)].live) continue;
    const size_t n = group_range(h).size();
    if (live_elements_ + n > o.max_live_parameters) break;
    issue(h);
    ahead += n;
  }
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
  stop_reading_ahead();
  for (size_t g = 0; g < live_.size(); ++g) free_group(int(g));
  live_elements_ = 0;
  for (size_t g = 0; g < live_.size(); ++g)
    if (persistent_[g]) {
      Gathered& e = issue(int(g));
      live_elements_ -= group_range(int(g)).size();  // persistent groups are not part of the live budget
      finish(e);
    }
}

}  // namespace zt
