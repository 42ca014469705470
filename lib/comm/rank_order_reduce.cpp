#include "comm/rank_order_reduce.hpp"

#include <algorithm>
#include <cstring>

#include "core/error.hpp"

namespace zt {
namespace {

// Small enough to live in L1 beside one block of every input.
constexpr size_t kBlock = 512;

inline float max_keep_nan(float acc, float v) { return (acc > v || acc != acc) ? acc : v; }

void accumulate(float* acc, const float* v, size_t n, ReduceOp op) {
  if (op == ReduceOp::Sum) {
    for (size_t j = 0; j < n; ++j) acc[j] = acc[j] + v[j];
  } else {
    for (size_t j = 0; j < n; ++j) acc[j] = max_keep_nan(acc[j], v[j]);
  }
}

}  // namespace

void reduce_in_rank_order(std::span<const void* const> inputs, void* out, size_t count, DType dtype,
                          ReduceOp op) {
  if (inputs.empty()) fail("reduce_in_rank_order: no inputs");
  if (count == 0) return;
  const size_t esize = dtype_size(dtype);
  if (inputs.size() == 1) {
    if (inputs[0] != out) std::memmove(out, inputs[0], count * esize);
    return;
  }
  auto at = [esize](const void* base, size_t i) {
    return static_cast<const unsigned char*>(base) + i * esize;
  };
  alignas(64) float acc[kBlock];
  alignas(64) float val[kBlock];
  for (size_t start = 0; start < count; start += kBlock) {
    const size_t n = std::min(kBlock, count - start);
    to_f32(dtype, at(inputs[0], start), acc, n);
    for (size_t q = 1; q < inputs.size(); ++q) {
      if (dtype == DType::F32) {
        accumulate(acc, reinterpret_cast<const float*>(at(inputs[q], start)), n, op);
      } else {
        to_f32(dtype, at(inputs[q], start), val, n);
        accumulate(acc, val, n, op);
      }
    }
    // Every input block was read above, so writing over an input that is also the output is safe.
    from_f32(dtype, acc, static_cast<unsigned char*>(out) + start * esize, n);
  }
}

}  // namespace zt
