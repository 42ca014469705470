#pragma once
// AdamW over the flat range of parameters one rank updates (its shard; everything at stage 0):
// fp32 master weights when training in 16 bits, Adam m and v, weight decay per tensor. The state
// lives in `space` (device memory, or host memory when offloaded) and is updated by the backend's
// VectorOps.
#include <vector>

#include "core/buffer.hpp"
#include "core/param_layout.hpp"
#include "kernels/backend.hpp"
#include "zero/partition.hpp"

namespace zt {

// The three fp32 arrays of the optimizer state.
enum class StateTensor { Master, AdamM, AdamV };

class ShardOptimizer {
public:
  // range: flat elements updated here; parameters past layout.total (padding) are never touched.
  ShardOptimizer(const ParamLayout& layout, Range range, DType param_dtype, const Backend& backend, MemSpace space);

  Range range() const { return range_; }
  // Copies the 16-bit parameters into the fp32 master (no-op in fp32 training).
  void init_master(ConstView params);
  // One AdamW step: grad = float(grads[i]) * grad_factor. params and grads view range().begin.
  void update(View params, ConstView grads, float grad_factor, const AdamWHyper& hyper, int64_t step);
  // The fp32 values of range(): the master copy, or the parameters themselves in fp32 training.
  const float* master(ConstView params) const;

  // Checkpoints: copies between host memory and the state of flat elements [r.begin, r.end)
  // (within range()). In fp32 training the master is the parameters: pass their view.
  void read(StateTensor t, Range r, ConstView params, float* host) const;
  void write(StateTensor t, Range r, View params, const float* host);
  // The 16-bit parameters of range() rounded from the master (after the master was written).
  void round_params(View params);

private:
  float* state(StateTensor t, void* params);  // element range().begin of t

  Range range_;
  DType dtype_;
  const Backend& backend_;
  Buffer<float> master_, m_, v_;
  std::vector<AdamSegment> segments_;  // tensor pieces of at most one chunk
};

}  // namespace zt
