#pragma once
// Stable sort of (token, position) pairs by token on the device, for the embedding backward
// (CUB's radix sort; kept apart so that the GPU-less tests can put a host sort in its place).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace zt::cuda {

// Bytes of scratch sort_tokens needs for n pairs (asks CUB: needs the device).
size_t sort_tokens_scratch_bytes(int n);

// tokens_out, positions_out = the pairs sorted by token as unsigned 32-bit keys, equal tokens in
// their input order.
void sort_tokens(void* scratch, size_t scratch_bytes, const uint32_t* tokens, uint32_t* tokens_out,
                 const int32_t* positions, int32_t* positions_out, int n, cudaStream_t stream);

}  // namespace zt::cuda
