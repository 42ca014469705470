#include "zero/resident_pieces.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

namespace zt {

namespace {
constexpr size_t kChunk = 16384;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// dst[i] = D(float(dst[i]) + add[i]) for a dtype-D array and an fp32 addend.
void add_into(DType dtype, void* dst, const float* add, size_t n) {
  if (dtype == DType::F32) {
    float* d = static_cast<float*>(dst);
    for (size_t i = 0; i < n; ++i) d[i] += add[i];
    return;
  }
  auto bytes = static_cast<char*>(dst);
  float tmp[kChunk];
  for (size_t i = 0; i < n; i += kChunk) {
    size_t k = std::min(kChunk, n - i);
    to_f32(dtype, bytes + i * 2, tmp, k);
    for (size_t j = 0; j < k; ++j) tmp[j] += add[i + j];
    from_f32(dtype, tmp, bytes + i * 2, k);
  }
}
}  // namespace

void all_gather_in_place(const StageContext& ctx, void* full, DType dtype, size_t piece_elements,
                         double& wait_seconds) {
  const Partition& part = ctx.partition;
  if (part.world_size() == 1) return;  // the one shard is the whole buffer, already in place
  const size_t esz = dtype_size(dtype);
  auto base = static_cast<char*>(full);
  piece_elements = std::max<size_t>(1, piece_elements);
  std::vector<std::vector<size_t>> counts;
  std::vector<WorkPtr> works;
  auto t0 = std::chrono::steady_clock::now();
  for (size_t a = 0; a < part.padded(); a += piece_elements) {
    Range range{a, std::min(a + piece_elements, part.padded())};
    Range own = range.intersect(part.own());
    counts.push_back(part.pieces(range));
    const char* send = base + (own.empty() ? a : own.begin) * esz;
    works.push_back(ctx.comm.all_gather(send, base + a * esz, counts.back(), dtype, true));
  }
  for (auto& w : works) w->wait();
  wait_seconds += seconds_since(t0);
}

// ---- FullParams ----

FullParams::FullParams(const StageContext& ctx)
    : ctx_(ctx), values_(MemCategory::Params, ctx.partition.padded() * dtype_size(ctx.dtype)) {}

void FullParams::init(const ParamInit& init) {
  std::vector<float> tmp(kChunk);
  for (size_t a = 0; a < ctx_.partition.numel(); a += kChunk) {
    size_t n = std::min(kChunk, ctx_.partition.numel() - a);
    init(tmp.data(), a, n);
    from_f32(ctx_.dtype, tmp.data(), at(a), n);
  }
}

const float* FullParams::fetch(int g) {
  auto& group = ctx_.layout.groups[size_t(g)];
  if (ctx_.dtype == DType::F32) return reinterpret_cast<const float*>(at(group.offset));
  bool fresh = false;
  float* view = views_.acquire(g, group.size, &fresh);
  if (fresh) to_f32(ctx_.dtype, at(group.offset), view, group.size);
  return view;
}

void FullParams::release(int g) {
  if (ctx_.dtype != DType::F32) views_.release(g);
}

void FullParams::all_gather_shards(StageTimers& timers) {
  all_gather_in_place(ctx_, values_.data(), ctx_.dtype, size_t(ctx_.config.zero.allgather_bucket_size),
                      timers.gather_wait_s);
}

// ---- FullGrads ----

FullGrads::FullGrads(const StageContext& ctx)
    : ctx_(ctx), values_(MemCategory::Grads, ctx.partition.padded() * dtype_size(ctx.dtype)) {
  auto apply = [this](Range own, const void* data) {
    convert(ctx_.comm_dtype, data, ctx_.dtype, at(own.begin), own.size());
  };
  bucketer_ = std::make_unique<GradBucketer>(ctx.partition, ctx.comm, ctx.comm_dtype,
                                             size_t(ctx.config.zero.reduce_bucket_size),
                                             ctx.config.zero.overlap_comm, apply);
}

void FullGrads::accumulate(int g, const float* grads) {
  auto& group = ctx_.layout.groups[size_t(g)];
  add_into(ctx_.dtype, at(group.offset), grads, group.size);
}

float* FullGrads::in_place(int g) {
  if (ctx_.dtype != DType::F32) return nullptr;
  return static_cast<float*>(at(ctx_.layout.groups[size_t(g)].offset));
}

void FullGrads::reduce_scatter(StageTimers& timers) {
  // One rank reducing in its own dtype: the sum is what the buffer holds (a pass over Ψ saved).
  if (ctx_.partition.world_size() == 1 && ctx_.comm_dtype == ctx_.dtype) return;
  bucketer_->reset_timers();
  // Top-down, the order backward produces gradients in, and never the padding: the same buckets
  // as stage 2 cuts, and the same bytes on the wire.
  bucketer_->add(0, values_.data(), ctx_.dtype, ctx_.partition.numel());
  bucketer_->wait_all();
  timers.reduce_wait_s += bucketer_->exposed_wait_seconds();
}

void FullGrads::all_gather_shards(StageTimers& timers) {
  all_gather_in_place(ctx_, values_.data(), ctx_.dtype, size_t(ctx_.config.zero.allgather_bucket_size),
                      timers.gather_wait_s);
}

void FullGrads::zero() { std::memset(values_.data(), 0, values_.bytes()); }

// ---- ShardGrads ----

ShardGrads::ShardGrads(const StageContext& ctx)
    : ctx_(ctx), values_(MemCategory::Grads, ctx.partition.shard_size() * dtype_size(ctx.dtype)) {
  auto apply = [this](Range own, const void* data) {
    size_t offset = own.begin - ctx_.partition.own().begin;
    std::vector<float> add(own.size());
    to_f32(ctx_.comm_dtype, data, add.data(), own.size());
    add_into(ctx_.dtype, values_.data() + offset * dtype_size(ctx_.dtype), add.data(), own.size());
  };
  bucketer_ = std::make_unique<GradBucketer>(ctx.partition, ctx.comm, ctx.comm_dtype,
                                             size_t(ctx.config.zero.reduce_bucket_size),
                                             ctx.config.zero.overlap_comm, apply);
}

void ShardGrads::add_group(int g, float* grads) {
  auto& group = ctx_.layout.groups[size_t(g)];
  if (ctx_.dtype != DType::F32) {
    // Round to the training dtype first, as stages 0-1 do when they store gradients.
    uint16_t tmp[kChunk];
    for (size_t i = 0; i < group.size; i += kChunk) {
      size_t k = std::min(kChunk, group.size - i);
      from_f32(ctx_.dtype, grads + i, tmp, k);
      to_f32(ctx_.dtype, tmp, grads + i, k);
    }
  }
  bucketer_->add(group.offset, grads, DType::F32, group.size);
}

void ShardGrads::finish() { bucketer_->wait_all(); }

void ShardGrads::zero() { std::memset(values_.data(), 0, values_.bytes()); }

}  // namespace zt
