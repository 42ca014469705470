#pragma once
// AdamW over the flat range of parameters one rank updates (its shard; everything at stage 0):
// fp32 master weights, Adam m and v, weight decay per tensor.
//
// Resident (no offload, parameters in memory): the state lives in device memory and one VectorOps
// call updates it; in fp32 training the parameters are the master. Offloaded (offload_optimizer
// cpu or nvme, or parameters in a file): the state lives in host memory or a file and is updated
// sub-group by sub-group by the host's AdamW (the CPU backend's VectorOps): the gradients of the
// next sub-group come to the host while one is updated, its updated parameters go back to the
// device, its state to the file. Both compute the same values in the same order, bit for bit.
#include <memory>
#include <vector>

#include "core/buffer.hpp"
#include "core/param_layout.hpp"
#include "kernels/backend.hpp"
#include "zero/engine_options.hpp"
#include "zero/offloaded_state.hpp"
#include "zero/param_shard.hpp"
#include "zero/partition.hpp"

namespace zt {

// The three fp32 arrays of the optimizer state.
enum class StateTensor { Master, AdamM, AdamV };

class ShardOptimizer {
public:
  // range: flat elements updated here; parameters past layout.total (padding) are never touched.
  // params: where the parameters of `range` live (resident or in a file).
  ShardOptimizer(const ParamLayout& layout, Range range, const EngineOptions& options, const Backend& backend,
                 ParamShard& params);

  // Bytes the offloaded path stages a sub-group's gradients (two slots) and parameters (one) in,
  // in host memory; 0 when the state is resident (no offload_optimizer, parameters in memory).
  static size_t staging_bytes(const EngineOptions& options, size_t shard_elements);

  Range range() const { return range_; }
  bool offloaded() const { return offloaded_ != nullptr; }
  // The master takes the values of the (16-bit) parameters; m and v start at zero.
  void init_master();
  // One AdamW step: grad = float(grads[i]) * grad_factor. grads views range().begin.
  void update(ConstView grads, float grad_factor, const AdamWHyper& hyper, int64_t step);
  // The same with the factor, and whether to update at all, in `norm` (the device's memory): kept
  // state is updated without the host waiting; offloaded state waits for it.
  void update(ConstView grads, const GradNorm* norm, const AdamWHyper& hyper, int64_t step);

  // Copies between host memory and the state of flat elements [r.begin, r.end) (within range()).
  void read(StateTensor t, Range r, float* host);
  void write(StateTensor t, Range r, const float* host);
  // The parameters of range() take the master's values, rounded to the training dtype (after the
  // master was written).
  void round_params();

  // Offloaded updates since the last reset: seconds the update waited for transfers and files, and
  // seconds the offload file's I/O ran (what overlapped the host AdamW is io - waited).
  struct OffloadTiming {
    double waited_s = 0, io_s = 0;
  };
  OffloadTiming timing() const;
  void reset_timing();

private:
  static constexpr int kGradStages = 2;  // one sub-group's gradients arrive while another's update
  // Segments of the sub-group [a, b) (relative to range().begin), with offsets relative to a.
  std::vector<AdamSegment> segments_in(Range sub) const;
  void update_offloaded(ConstView grads, float grad_factor, const AdamWHyper& hyper, int64_t step);
  // The state of sub-range r, one sub-group at a time: f(sub-group range, state pointers at r ∩ it).
  template <typename F>
  void for_each_sub_group(Range r, bool changes, F&& f);
  float* resident(StateTensor t);

  Range range_;
  DType dtype_;
  const Backend& backend_;
  ParamShard& params_;
  std::vector<AdamSegment> segments_;  // tensor pieces of at most one chunk, relative to range_.begin
  // Resident state.
  Buffer<float> master_, m_, v_;
  // Offloaded state and its host staging (gradients of two sub-groups, updated parameters).
  std::unique_ptr<OffloadedState> offloaded_;
  Buffer<uint8_t> grad_stage_[kGradStages], param_stage_;
  Event grads_arrived_[2];
  double waited_s_ = 0, io_at_reset_s_ = 0;
  Event grads_final_;  // the gradients are complete on the compute stream
};

}  // namespace zt
