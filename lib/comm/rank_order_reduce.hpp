#pragma once
// The deterministic element-wise reduction behind the CPU collectives:
//   out[i] = (((in[0][i] op in[1][i]) op in[2][i]) ... op in[N-1][i])
// in rank order, accumulated in fp32 and rounded to the element type once at the end. Each
// element depends only on the N values at its index, so the result is the same bits however a
// buffer is cut into messages, chunks or buckets. Max propagates NaN (overflow checks rely on it).
#include <cstddef>
#include <span>

#include "comm/communicator.hpp"
#include "core/dtype.hpp"

namespace zt {

// out may be the same memory as one of the inputs (in-place reduction); no other overlap.
void reduce_in_rank_order(std::span<const void* const> inputs, void* out, size_t count, DType dtype,
                          ReduceOp op);

}  // namespace zt
