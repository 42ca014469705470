#include "zero/shard_optimizer.hpp"

#include <algorithm>

namespace zt {

namespace {
// Segments of at most this many elements: the unit of parallel work on the CPU.
constexpr size_t kChunk = 16384;
}  // namespace

ShardOptimizer::ShardOptimizer(const ParamLayout& layout, Range range, DType param_dtype, const Backend& backend,
                               MemSpace space)
    : range_(range), dtype_(param_dtype), backend_(backend) {
  Device& dev = backend.device;
  if (dtype_ != DType::F32) master_ = Buffer<float>(dev, space, MemCategory::Optimizer, range.size());
  m_ = Buffer<float>(dev, space, MemCategory::Optimizer, range.size());
  v_ = Buffer<float>(dev, space, MemCategory::Optimizer, range.size());
  for (auto& g : layout.groups)
    for (auto& t : g.tensors) {
      Range piece = range.intersect({t.offset, t.offset + t.numel()});
      for (size_t a = piece.begin; a < piece.end; a += kChunk)
        segments_.push_back({a - range.begin, std::min(kChunk, piece.end - a), t.weight_decay});
    }
}

void ShardOptimizer::init_master(ConstView params) {
  if (dtype_ != DType::F32) backend_.vector.convert(params, {master_.data(), DType::F32, master_.space()}, range_.size());
}

const float* ShardOptimizer::master(ConstView params) const {
  return dtype_ == DType::F32 ? static_cast<const float*>(params.data) : master_.data();
}

float* ShardOptimizer::state(StateTensor t, void* params) {
  switch (t) {
    case StateTensor::AdamM: return m_.data();
    case StateTensor::AdamV: return v_.data();
    case StateTensor::Master: break;
  }
  return dtype_ == DType::F32 ? static_cast<float*>(params) : master_.data();
}

void ShardOptimizer::read(StateTensor t, Range r, ConstView params, float* host) const {
  Device& dev = backend_.device;
  const float* src = const_cast<ShardOptimizer*>(this)->state(t, const_cast<void*>(params.data));
  dev.copy(host, src + (r.begin - range_.begin), r.size() * sizeof(float), dev.compute());
  dev.synchronize(dev.compute());
}

void ShardOptimizer::write(StateTensor t, Range r, View params, const float* host) {
  Device& dev = backend_.device;
  dev.copy(state(t, params.data) + (r.begin - range_.begin), host, r.size() * sizeof(float), dev.compute());
  dev.synchronize(dev.compute());
}

void ShardOptimizer::round_params(View params) {
  if (dtype_ != DType::F32) backend_.vector.convert({master_.data(), DType::F32, master_.space()}, params, range_.size());
}

void ShardOptimizer::update(View params, ConstView grads, float grad_factor, const AdamWHyper& hyper, int64_t step) {
  float* w = dtype_ == DType::F32 ? static_cast<float*>(params.data) : master_.data();
  backend_.vector.adamw(segments_, {w, m_.data(), v_.data()}, grads, grad_factor, params, hyper, step);
}

}  // namespace zt
