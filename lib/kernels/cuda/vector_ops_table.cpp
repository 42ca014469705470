#include "kernels/cuda/vector_ops_table.hpp"

#include <climits>

#include "core/error.hpp"
#include "kernels/backend.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/round.hpp"
#include "kernels/cuda/cuda_vector_ops.hpp"

namespace zt::cuda {

namespace {

bool same_segments(std::span<const AdamSegment> a, const std::vector<AdamSegment>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].offset != b[i].offset || a[i].size != b[i].size || a[i].decay != b[i].decay) return false;
  return true;
}

// Grows `buffer` to at least n elements (its contents are not kept).
template <typename T>
void reserve(Buffer<T>& buffer, Device& device, MemSpace space, size_t n) {
  if (buffer.size() >= n) return;
  buffer.reset();
  buffer = Buffer<T>(device, space, MemCategory::Buffers, n, Init::Uninitialised);
}

}  // namespace

bool CudaVectorOps::runs_on_host(std::initializer_list<const void*> pointers, const char* op) {
  bool pageable = false, on_device = false;
  for (const void* p : pointers) {
    if (!p) continue;
    const MemoryKind kind = memory_kind(p);
    pageable = pageable || kind == MemoryKind::Pageable;
    on_device = on_device || kind == MemoryKind::Device;
  }
  if (!pageable) return false;
  if (on_device)
    fail("VectorOps::{} on {}: one buffer is in pageable host memory, which GPU kernels cannot reach, and another in "
         "device memory (use pinned memory, e.g. pin_memory true, for host buffers the GPU works on)",
         op, device_.name());
  device_.synchronize(device_.compute());
  return true;
}

void CudaVectorOps::convert(ConstView src, View dst, size_t n) {
  if (n == 0) return;
  if (runs_on_host({src.data, dst.data}, "convert")) return cpu_backend().vector.convert(src, dst, n);
  if (src.dtype == dst.dtype) return device_.copy(dst.data, src.data, n * dtype_size(dst.dtype), device_.compute());
  cast(dst.dtype, dst.data, src.dtype, src.data, n, stream());
}

void CudaVectorOps::add(ConstView src, View dst, size_t n) {
  if (n == 0) return;
  if (runs_on_host({src.data, dst.data}, "add")) return cpu_backend().vector.add(src, dst, n);
  add_into(dst.dtype, dst.data, src.dtype, src.data, n, stream());
}

void CudaVectorOps::round_to(DType dtype, float* x, size_t n) {
  if (n == 0 || dtype == DType::F32) return;
  if (runs_on_host({x}, "round_to")) return cpu_backend().vector.round_to(dtype, x, n);
  cuda::round_to(dtype, x, n, stream());
}

double CudaVectorOps::sum_of_squares(ConstView x, size_t n, float factor) {
  if (n == 0) return 0.0;
  if (runs_on_host({x.data}, "sum_of_squares")) return cpu_backend().vector.sum_of_squares(x, n, factor);
  const size_t count = sum_squares_partial_count(n);
  reserve(partials_, device_, MemSpace::Device, count);
  reserve(partials_host_, device_, MemSpace::Pinned, count);
  sum_squares_partials(x.dtype, x.data, n, factor, partials_.data(), stream());
  ZT_CUDA_CHECK(cudaMemcpyAsync(partials_host_.data(), partials_.data(), count * sizeof(double),
                                cudaMemcpyDeviceToHost, stream()));
  ZT_CUDA_CHECK(cudaStreamSynchronize(stream()));
  double total = 0;  // in chunk order, as the CPU adds its partials
  for (size_t c = 0; c < count; ++c) total += partials_host_[c];
  return total;
}

void CudaVectorOps::plan_chunks(std::span<const AdamSegment> segments) {
  if (!chunks_.empty() && same_segments(segments, planned_)) return;
  std::vector<AdamWChunk> table;
  for (const AdamSegment& s : segments)
    for (size_t a = 0; a < s.size; a += kAdamPiece)
      table.push_back({uint64_t(s.offset + a), uint32_t(std::min(kAdamPiece, s.size - a)), s.decay ? 1u : 0u});
  if (table.size() > size_t(INT_MAX)) fail("VectorOps::adamw: {} pieces exceed a grid", table.size());
  reserve(chunks_, device_, MemSpace::Device, std::max<size_t>(1, table.size()));
  device_.copy(chunks_.data(), table.data(), table.size() * sizeof(AdamWChunk), device_.compute());
  num_chunks_ = int(table.size());
  planned_.assign(segments.begin(), segments.end());
}

void CudaVectorOps::adamw(std::span<const AdamSegment> segments, const AdamState& state, ConstView grads,
                          float grad_factor, View params, const AdamWHyper& hyper, int64_t step) {
  if (runs_on_host({state.master, state.m, state.v, grads.data, params.data}, "adamw"))
    return cpu_backend().vector.adamw(segments, state, grads, grad_factor, params, hyper, step);
  plan_chunks(segments);
  void* out = params.data == state.master ? nullptr : params.data;  // fp32 training: the master is the parameter
  adamw_update_chunks(state.master, state.m, state.v, grads.data, grads.dtype, grad_factor, out, params.dtype,
                      chunks_.data(), num_chunks_, hyper, step, stream());
}

void CudaVectorOps::sum_of_squares_into(ConstView x, size_t n, float factor, double* sum) {
  if (runs_on_host({x.data, sum}, "sum_of_squares_into"))
    return cpu_backend().vector.sum_of_squares_into(x, n, factor, sum);
  if (n == 0) return ZT_CUDA_CHECK(cudaMemsetAsync(sum, 0, sizeof(double), stream()));
  const size_t count = sum_squares_partial_count(n);
  reserve(partials_, device_, MemSpace::Device, count);
  sum_squares_partials(x.dtype, x.data, n, factor, partials_.data(), stream());
  sum_in_order(partials_.data(), count, sum, stream());
}

void CudaVectorOps::grad_norm(const double* sums, int count, float factor, double max_norm, bool skip_nonfinite,
                              GradNorm* out) {
  if (runs_on_host({sums, out}, "grad_norm"))
    return cpu_backend().vector.grad_norm(sums, count, factor, max_norm, skip_nonfinite, out);
  cuda::grad_norm(sums, count, factor, max_norm, skip_nonfinite, out, stream());
}

void CudaVectorOps::adamw(std::span<const AdamSegment> segments, const AdamState& state, ConstView grads,
                          const GradNorm* norm, View params, const AdamWHyper& hyper, int64_t step) {
  if (runs_on_host({state.master, state.m, state.v, grads.data, params.data, norm}, "adamw"))
    return cpu_backend().vector.adamw(segments, state, grads, norm, params, hyper, step);
  plan_chunks(segments);
  void* out = params.data == state.master ? nullptr : params.data;  // fp32 training: the master is the parameter
  adamw_update_chunks(state.master, state.m, state.v, grads.data, grads.dtype, 0.0f, out, params.dtype,
                      chunks_.data(), num_chunks_, hyper, step, stream(), norm);
}

}  // namespace zt::cuda
