// Stage 3: parameters, gradients and optimizer state all sharded. A group is all-gathered before
// the model uses it and freed after, with trace-based prefetch: the fetch order of the first
// micro-batch is recorded, and later fetches gather the groups that come next in it, up to
// stage3_prefetch_bucket_size elements ahead and stage3_max_live_parameters gathered at once.
#include <chrono>
#include <map>
#include <vector>

#include "zero/resident_pieces.hpp"
#include "zero/stage3.hpp"

namespace zt {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

class Stage3 final : public Stage {
public:
  explicit Stage3(const StageContext& ctx)
      : ctx_(ctx),
        shard_(ctx.config.zero.offload_param.device == "none" ? MemCategory::Params : MemCategory::Offload,
               ctx.partition.shard_size() * dtype_size(ctx.dtype)),
        grads_(ctx) {
    auto& z = ctx.config.zero;
    for (size_t g = 0; g < ctx.layout.groups.size(); ++g)
      if (ctx.layout.groups[g].size < size_t(z.stage3_param_persistence_threshold)) persistent_.push_back(int(g));
    is_persistent_.assign(ctx.layout.groups.size(), false);
    for (int g : persistent_) is_persistent_[size_t(g)] = true;
  }

  void init_params(const ParamInit& init) override {
    Range own = ctx_.partition.trained(ctx_.partition.rank());
    std::vector<float> tmp(16384);
    for (size_t a = own.begin; a < own.end; a += tmp.size()) {
      size_t n = std::min(tmp.size(), own.end - a);
      init(tmp.data(), a, n);
      from_f32(ctx_.dtype, tmp.data(), shard_at(a), n);
    }
    refresh_persistent();
  }

  const float* fetch(int g) override {
    if (is_persistent_[size_t(g)]) return persistent_views_.find(g);
    advance_trace(g);
    Gathered& e = issue(g);
    if (e.work) {
      auto t0 = std::chrono::steady_clock::now();
      e.work->wait();
      timers_.gather_wait_s += seconds_since(t0);
      e.work.reset();
    }
    if (!e.ready) {
      if (ctx_.dtype != DType::F32) {
        to_f32(ctx_.dtype, e.raw.data(), e.values.data(), e.values.size());
        e.raw.reset();
      }
      e.ready = true;
    }
    ++e.refs;
    prefetch();
    return e.values.data();
  }

  void release(int g) override {
    if (is_persistent_[size_t(g)]) return;
    auto it = live_.find(g);
    if (it == live_.end() || --it->second.refs > 0) return;
    if (!reused_soon(g)) free_group(g);
  }

  void begin_micro_batch() override {
    if (!trace_.empty()) tracing_ = false;  // one micro-batch's fetch order is the trace
    pos_ = 0;
  }

  void grads_ready(int g, float* grads) override { grads_.add_group(g, grads); }
  void reduce_gradients() override {
    grads_.finish();
    if (!trace_.empty()) tracing_ = false;
  }
  Range update_range() const override { return ctx_.partition.own(); }
  void* params() override { return shard_.data(); }
  const void* grads() const override { return grads_.data(); }
  const void* grads_of_shard(int) const override { return nullptr; }
  void zero_grads() override { grads_.zero(); }
  void publish_params() override {
    // Gathered copies are stale now; persistent groups are refreshed.
    for (auto& [g, e] : live_) {
      if (e.work) e.work->wait();
    }
    live_.clear();
    live_elements_ = 0;
    refresh_persistent();
  }
  StageTimers timers() const override {
    StageTimers t = timers_;
    t.reduce_wait_s = grads_.exposed_wait_seconds();
    return t;
  }
  void reset_timers() override {
    timers_ = {};
    grads_.reset_timers();
  }

private:
  struct Gathered {
    Buffer<uint8_t> raw;   // gathered 16-bit values (until converted)
    Buffer<float> values;  // what the model reads
    WorkPtr work;
    std::vector<size_t> counts;
    bool ready = false;
    int refs = 0;
  };

  uint8_t* shard_at(size_t flat) {
    return shard_.data() + (flat - ctx_.partition.own().begin) * dtype_size(ctx_.dtype);
  }

  Range group_range(int g) const {
    auto& group = ctx_.layout.groups[size_t(g)];
    return {group.offset, group.offset + group.size};
  }

  // Starts the all-gather of group g unless it is gathered or in flight.
  Gathered& issue(int g) {
    auto it = live_.find(g);
    if (it != live_.end()) return it->second;
    Gathered& e = live_[g];
    Range range = group_range(g);
    e.values = Buffer<float>(MemCategory::Buffers, range.size());
    void* recv = e.values.data();
    if (ctx_.dtype != DType::F32) {
      e.raw = Buffer<uint8_t>(MemCategory::Buffers, range.size() * 2);
      recv = e.raw.data();
    }
    e.counts = ctx_.partition.pieces(range);
    Range own = range.intersect(ctx_.partition.own());
    const void* send = own.empty() ? shard_.data() : shard_at(own.begin);
    auto t0 = std::chrono::steady_clock::now();  // without overlap the call itself blocks
    e.work = ctx_.comm.all_gather(send, recv, e.counts, ctx_.dtype, ctx_.config.zero.overlap_comm);
    timers_.gather_wait_s += seconds_since(t0);
    live_elements_ += range.size();
    return e;
  }

  void free_group(int g) {
    auto it = live_.find(g);
    if (it == live_.end()) return;
    if (it->second.work) it->second.work->wait();
    live_elements_ -= it->second.values.size();
    live_.erase(it);
  }

  void advance_trace(int g) {
    if (tracing_) {
      trace_.push_back(g);
      return;
    }
    for (size_t k = pos_; k < trace_.size(); ++k)
      if (trace_[k] == g) {
        pos_ = k + 1;
        return;
      }
  }

  // Gathers the next groups of the trace until stage3_prefetch_bucket_size elements are on the
  // way; the last may overshoot it (as in DeepSpeed's coordinator), so a bucket smaller than a
  // group still prefetches the next group. Prefetch never takes the live parameters past
  // stage3_max_live_parameters (a fetch on demand may).
  void prefetch() {
    auto& z = ctx_.config.zero;
    if (tracing_) return;
    size_t ahead = 0;
    for (size_t k = pos_; k < trace_.size() && ahead < size_t(z.stage3_prefetch_bucket_size); ++k) {
      int h = trace_[k];
      if (is_persistent_[size_t(h)] || live_.count(h)) continue;
      size_t n = group_range(h).size();
      if (live_elements_ + n > size_t(z.stage3_max_live_parameters)) break;
      issue(h);
      ahead += n;
    }
  }

  // Keep a released group when the trace uses it again within stage3_max_reuse_distance elements
  // and the live budget allows.
  bool reused_soon(int g) const {
    auto& z = ctx_.config.zero;
    if (tracing_ || z.stage3_max_reuse_distance == 0) return false;
    if (live_elements_ > size_t(z.stage3_max_live_parameters)) return false;
    size_t distance = 0;
    for (size_t k = pos_; k < trace_.size(); ++k) {
      if (trace_[k] == g) return distance <= size_t(z.stage3_max_reuse_distance);
      if (!is_persistent_[size_t(trace_[k])]) distance += group_range(trace_[k]).size();
    }
    return false;
  }

  void refresh_persistent() {
    persistent_views_.clear();
    for (int g : persistent_) {
      Range range = group_range(g);
      bool fresh = false;
      float* view = persistent_views_.acquire(g, range.size(), &fresh);
      Buffer<uint8_t> raw(MemCategory::Buffers, range.size() * dtype_size(ctx_.dtype));
      auto counts = ctx_.partition.pieces(range);
      Range own = range.intersect(ctx_.partition.own());
      const void* send = own.empty() ? shard_.data() : shard_at(own.begin);
      auto t0 = std::chrono::steady_clock::now();
      ctx_.comm.all_gather(send, raw.data(), counts, ctx_.dtype)->wait();
      timers_.gather_wait_s += seconds_since(t0);
      to_f32(ctx_.dtype, raw.data(), view, range.size());
    }
  }

  const StageContext& ctx_;
  Buffer<uint8_t> shard_;
  ShardGrads grads_;
  std::vector<int> persistent_;
  std::vector<bool> is_persistent_;
  GroupViews persistent_views_;
  std::map<int, Gathered> live_;
  size_t live_elements_ = 0;
  std::vector<int> trace_;
  bool tracing_ = true;
  size_t pos_ = 0;
  StageTimers timers_;
};

}  // namespace

std::unique_ptr<Stage> make_stage3(const StageContext& ctx) { return std::make_unique<Stage3>(ctx); }

}  // namespace zt
