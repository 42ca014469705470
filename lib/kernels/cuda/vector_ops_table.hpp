#pragma once
// The engine's operator table (kernels/vector_ops.hpp) on one GPU: the launchers of
// kernels/cuda/cuda_vector_ops.hpp, round.hpp and adamw.hpp on the device's compute stream.
// sum_of_squares brings the kernel's fixed 16384-element chunk partials to the host and adds them
// in order; adamw launches one block per piece of at most 16384 elements from a chunk table kept
// in device memory (made at the first call, again only when the segments change).
// Views the kernels cannot reach (pageable host memory) go to the CPU's table after the compute
// stream has finished with them, when every view of the call is in host memory; a call mixing
// pageable host memory with device memory is an error.
#include <vector>

#include "core/buffer.hpp"
#include "kernels/cuda/cuda_adamw.hpp"
#include "kernels/cuda/cuda_device.hpp"
#include "kernels/vector_ops.hpp"

namespace zt::cuda {

class CudaVectorOps final : public VectorOps {
public:
  explicit CudaVectorOps(CudaDevice& device) : device_(device) {}

  void convert(ConstView src, View dst, size_t n) override;
  void add(ConstView src, View dst, size_t n) override;
  void round_to(DType dtype, float* x, size_t n) override;
  double sum_of_squares(ConstView x, size_t n, float factor) override;
  void adamw(std::span<const AdamSegment> segments, const AdamState& state, ConstView grads, float grad_factor,
             View params, const AdamWHyper& hyper, int64_t step) override;
  void sum_of_squares_into(ConstView x, size_t n, float factor, double* sum) override;
  void grad_norm(const double* sums, int count, float factor, double max_norm, bool skip_nonfinite,
                 GradNorm* out) override;
  void adamw(std::span<const AdamSegment> segments, const AdamState& state, ConstView grads, const GradNorm* norm,
             View params, const AdamWHyper& hyper, int64_t step) override;

  // Elements per AdamW block: segments are cut into pieces of at most this many.
  static constexpr size_t kAdamPiece = 16384;

private:
  // True when the pointers are all host memory and some are pageable: the call runs on the CPU
  // (after the compute stream's work). Throws when pageable memory meets device memory.
  bool runs_on_host(std::initializer_list<const void*> pointers, const char* op);
  void plan_chunks(std::span<const AdamSegment> segments);
  cudaStream_t stream() const { return device_.compute_stream(); }

  CudaDevice& device_;
  Buffer<double> partials_, partials_host_;  // sum-of-squares partials, on the device and pinned
  std::vector<AdamSegment> planned_;          // the segments chunks_ was made from
  Buffer<AdamWChunk> chunks_;
  int num_chunks_ = 0;
};

}  // namespace zt::cuda
