#pragma once
// AdamW over the flat range of parameters one rank updates (its shard; everything at stage 0):
// fp32 master weights when training in 16 bits, Adam m and v, weight decay per tensor.
#include <vector>

#include "core/buffer.hpp"
#include "core/dtype.hpp"
#include "core/param_layout.hpp"
#include "optim/adamw.hpp"
#include "zero/partition.hpp"

namespace zt {

class ShardOptimizer {
public:
  // range: flat elements updated here; parameters past layout.total (padding) are never touched.
  // state_category: Optimizer, or Offload when the optimizer state is offloaded.
  ShardOptimizer(const ParamLayout& layout, Range range, DType param_dtype, MemCategory state_category);

  Range range() const { return range_; }
  // Copies the 16-bit parameters into the fp32 master (no-op in fp32 training).
  void init_master(const void* params);
  // One AdamW step: grad = float(grads[i]) * grad_factor. params and grads point at range().begin.
  void update(void* params, const void* grads, float grad_factor, const AdamWHyper& hyper, int64_t step);
  // The fp32 values of range(): the master copy, or the parameters themselves in fp32 training.
  const float* master(const void* params) const;
  float* master(void* params);

private:
  // A piece of one tensor inside range_, at most a chunk long: the unit of parallel work.
  struct Chunk {
    size_t offset, size;  // relative to range_.begin
    bool decay;
  };
  Range range_;
  DType dtype_;
  Buffer<float> master_, m_, v_;
  std::vector<Chunk> chunks_;
};

// Sum over [0, n) of (float(grads[i]) * factor)^2 in double, in fixed-size chunks summed in order:
// the result depends only on the values, never on threads or on how callers cut their work.
double grad_sum_of_squares(DType dtype, const void* grads, size_t n, float factor);

}  // namespace zt
