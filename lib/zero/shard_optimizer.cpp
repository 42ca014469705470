#include "zero/shard_optimizer.hpp"

#include <algorithm>

namespace zt {

namespace {
constexpr size_t kChunk = 16384;
}

ShardOptimizer::ShardOptimizer(const ParamLayout& layout, Range range, DType param_dtype,
                               MemCategory state_category)
    : range_(range), dtype_(param_dtype) {
  if (dtype_ != DType::F32) master_ = Buffer<float>(state_category, range.size());
  m_ = Buffer<float>(state_category, range.size());
  v_ = Buffer<float>(state_category, range.size());
  for (auto& g : layout.groups)
    for (auto& t : g.tensors) {
      Range piece = range.intersect({t.offset, t.offset + t.numel()});
      for (size_t a = piece.begin; a < piece.end; a += kChunk)
        chunks_.push_back({a - range.begin, std::min(kChunk, piece.end - a), t.weight_decay});
    }
}

void ShardOptimizer::init_master(const void* params) {
  if (dtype_ != DType::F32) to_f32(dtype_, params, master_.data(), range_.size());
}

const float* ShardOptimizer::master(const void* params) const {
  return dtype_ == DType::F32 ? static_cast<const float*>(params) : master_.data();
}
float* ShardOptimizer::master(void* params) {
  return dtype_ == DType::F32 ? static_cast<float*>(params) : master_.data();
}

void ShardOptimizer::update(void* params, const void* grads, float grad_factor,
                            const AdamWHyper& hyper, int64_t step) {
  float* w = master(params);
  const size_t esz = dtype_size(dtype_);
  auto grad_bytes = static_cast<const char*>(grads);
  auto param_bytes = static_cast<char*>(params);
  // Elementwise, so the threads' split never changes a bit.
#pragma omp parallel
  {
    std::vector<float> g(kChunk);
#pragma omp for schedule(static)
    for (size_t c = 0; c < chunks_.size(); ++c) {
      const Chunk& k = chunks_[c];
      to_f32(dtype_, grad_bytes + k.offset * esz, g.data(), k.size);
      for (size_t i = 0; i < k.size; ++i) g[i] *= grad_factor;
      adamw_update(w + k.offset, g.data(), m_.data() + k.offset, v_.data() + k.offset, k.size, hyper, step, k.decay);
      if (dtype_ != DType::F32) from_f32(dtype_, w + k.offset, param_bytes + k.offset * esz, k.size);
    }
  }
}

double grad_sum_of_squares(DType dtype, const void* grads, size_t n, float factor) {
  const size_t esz = dtype_size(dtype);
  auto bytes = static_cast<const char*>(grads);
  size_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<double> partial(chunks, 0.0);
#pragma omp parallel for schedule(static)
  for (size_t c = 0; c < chunks; ++c) {
    float g[kChunk];
    size_t len = std::min(kChunk, n - c * kChunk);
    to_f32(dtype, bytes + c * kChunk * esz, g, len);
    double s = 0;
    for (size_t k = 0; k < len; ++k) {
      double x = double(g[k] * factor);
      s += x * x;
    }
    partial[c] = s;
  }
  double total = 0;
  for (double p : partial) total += p;
  return total;
}

}  // namespace zt
