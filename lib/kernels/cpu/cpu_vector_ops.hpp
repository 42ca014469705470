#pragma once
// The engine's operator table on the CPU: host loops, OpenMP where the work is large.
#include "kernels/vector_ops.hpp"

namespace zt::cpu {

class CpuVectorOps final : public VectorOps {
public:
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
};

}  // namespace zt::cpu
