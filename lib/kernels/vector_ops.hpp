#pragma once
// The operator table of the ZeRO engine (docs/architecture.md, "Device seams"): elementwise work over flat
// buffers of parameters, gradients and optimizer state, in any of the training dtypes, on one
// device. Every operation is elementwise or reduces in a fixed order, so results never depend on
// threads, streams or how a caller cuts its ranges. Work is queued on the device's compute stream.
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/view.hpp"
#include "kernels/grad_norm.hpp"
#include "optim/adamw.hpp"

namespace zt {

// A contiguous piece of the range AdamW updates, with its weight-decay rule (a piece of one tensor).
struct AdamSegment {
  size_t offset = 0, size = 0;  // elements, relative to the start of the state buffers
  bool decay = false;
};

// The optimizer state of a range: fp32 master weights, Adam's first and second moments.
struct AdamState {
  float* master = nullptr;
  float* m = nullptr;
  float* v = nullptr;
};

class VectorOps {
public:
  virtual ~VectorOps() = default;
  // dst[i] = src[i] converted (round to nearest even); the same dtype copies.
  virtual void convert(ConstView src, View dst, size_t n) = 0;
  // dst[i] = dst[i] + src[i], computed in fp32 and rounded once to dst's dtype.
  virtual void add(ConstView src, View dst, size_t n) = 0;
  // x[i] = float(dtype(x[i])): fp32 values rounded to what `dtype` can hold.
  virtual void round_to(DType dtype, float* x, size_t n) = 0;
  // Σ (float(x[i]) · factor)² in double over 16384-element chunks summed in order (the host gets
  // the result; it depends only on the values).
  virtual double sum_of_squares(ConstView x, size_t n, float factor) = 0;
  // One AdamW step over the segments: g = grad_factor · float(grads[i]); master, m, v updated in
  // place; params[i] = params.dtype(master[i]) unless params is the master itself (fp32 training).
  virtual void adamw(std::span<const AdamSegment> segments, const AdamState& state, ConstView grads,
                     float grad_factor, View params, const AdamWHyper& hyper, int64_t step) = 0;

  // The gradient norm's steps kept where the device computes (device memory on a GPU), so that the
  // host never waits for them inside a training step:
  // - sum_of_squares's sum written to *sum (one double there);
  virtual void sum_of_squares_into(ConstView x, size_t n, float factor, double* sum) = 0;
  // - from `count` such sums (added in order): *out = {their total, its square root,
  //   float(factor · clip_coefficient(root, max_norm)), skip = skip_nonfinite && the total is not
  //   finite} (optim/grad_clip.hpp), the host's arithmetic to the bit;
  virtual void grad_norm(const double* sums, int count, float factor, double max_norm, bool skip_nonfinite,
                         GradNorm* out) = 0;
  // - adamw with norm->grad_factor, updating nothing when norm->skip.
  virtual void adamw(std::span<const AdamSegment> segments, const AdamState& state, ConstView grads,
                     const GradNorm* norm, View params, const AdamWHyper& hyper, int64_t step) = 0;
};

}  // namespace zt
