#pragma once
// AdamW over the flat range of parameters one rank updates (its shard; everything at stage 0):
// fp32 master weights, Adam m and v, weight decay per tensor. Two strategies compute the same
// values in the same order, bit for bit:
//   resident   (no offload, parameters in memory) the state lives in device memory and one
//              VectorOps call updates it; in fp32 training the parameters are the master.
//   offloaded  (offload_optimizer cpu or nvme, or parameters in a file) the state lives in host
//              memory or a file and is updated sub-group by sub-group by the host's AdamW: the
//              gradients of the next sub-group come to the host while one is updated, its updated
//              parameters go back to the device, its state to the file.
#include <memory>
#include <vector>

#include "core/param_layout.hpp"
#include "core/state_access.hpp"
#include "core/step_clock.hpp"
#include "kernels/backend.hpp"
#include "zero/engine_options.hpp"
#include "zero/offloaded_state.hpp"
#include "zero/param_shard.hpp"
#include "zero/partition.hpp"

namespace zt {

class ShardOptimizer {
public:
  // What either strategy is made of.
  struct Parts {
    const ParamLayout& layout;
    Range range;  // flat elements updated here; parameters past layout.total (padding) are never touched
    const EngineOptions& options;
    const Backend& backend;  // the device and its vector operators
    VectorOps& host;         // the host's vector operators, for offloaded state
    ParamShard& params;      // where the parameters of `range` live (resident or in a file)
    StepClock& clock;        // the offloaded update's waits on transfers and files, and its file's I/O
  };
  // The offloaded strategy when the options or the parameters ask for it, else the resident one.
  static std::unique_ptr<ShardOptimizer> make(const Parts& parts);
  // Bytes the offloaded strategy stages a sub-group's gradients (two slots) and parameters (one)
  // in, in host memory; 0 when the state is resident (no offload_optimizer, parameters in memory).
  static size_t staging_bytes(const EngineOptions& options, size_t shard_elements);
  // Bytes of the offloaded state in a file (offload_optimizer nvme) and of its sub-groups in host
  // memory; zeros when the state is not in a file.
  static FileStateBytes file_state_bytes(const EngineOptions& options, size_t shard_elements);

  virtual ~ShardOptimizer() = default;
  Range update_range() const { return range_; }
  // The master takes the values of the (16-bit) parameters; m and v start at zero.
  virtual void init_master() = 0;
  // One AdamW step: grad = float(grads[i]) * norm->grad_factor, none when norm->skip. `norm` is in
  // the device's memory: resident state is updated without the host waiting; the offloaded
  // strategy reads it first. grads views update_range().begin. The tensors kept in fp32 under a
  // 16-bit dtype (TensorSpec::keep_fp32) take theirs from kept_grads instead (device memory, fp32:
  // every kept tensor's, side by side in layout order; Fp32Parts::kept_grads).
  virtual void update(ConstView grads, const float* kept_grads, const GradNorm* norm, const AdamWHyper& hyper,
                      int64_t step) = 0;
  // Copies between host memory and the state of flat elements [r.begin, r.end) (within update_range()).
  virtual void read(StateTensor t, Range r, float* host) = 0;
  virtual void write(StateTensor t, Range r, const float* host) = 0;
  // The parameters of update_range() take the master's values, rounded to the training dtype
  // (after the master was written).
  virtual void round_params() = 0;

protected:
  explicit ShardOptimizer(const Parts& parts);
  Range relative(Range r) const { return {r.begin - range_.begin, r.end - range_.begin}; }

  // The piece of a kept tensor in the range: where it starts (relative to range_.begin), where its
  // gradients start in kept_grads, and its segments relative to its start.
  struct KeptPiece {
    size_t offset = 0, grad = 0;
    std::vector<AdamSegment> segments;
  };

  Range range_;
  DType dtype_;
  ParamShard& params_;
  std::vector<AdamSegment> segments_;  // tensor pieces of at most one chunk, relative to range_.begin
  std::vector<KeptPiece> kept_;        // the kept tensors' pieces (not among segments_)
};

// The two strategies (ShardOptimizer::make chooses).
std::unique_ptr<ShardOptimizer> make_resident_optimizer(const ShardOptimizer::Parts& parts);
std::unique_ptr<ShardOptimizer> make_offloaded_optimizer(const ShardOptimizer::Parts& parts);

}  // namespace zt
