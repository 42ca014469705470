#include "kernels/cuda/token_sort.hpp"

#include <cub/device/device_radix_sort.cuh>

#include "kernels/cuda/check.hpp"

namespace zt::cuda {

size_t sort_tokens_scratch_bytes(int n) {
  size_t bytes = 0;
  ZT_CUDA_CHECK((cub::DeviceRadixSort::SortPairs(nullptr, bytes, static_cast<const uint32_t*>(nullptr),
                                                 static_cast<uint32_t*>(nullptr), static_cast<const int32_t*>(nullptr),
                                                 static_cast<int32_t*>(nullptr), n, 0, 32)));
  return bytes;
}

void sort_tokens(void* scratch, size_t scratch_bytes, const uint32_t* tokens, uint32_t* tokens_out,
                 const int32_t* positions, int32_t* positions_out, int n, cudaStream_t stream) {
  // All 32 bits: a negative token (a large unsigned key) must not share a run with a valid one.
  ZT_CUDA_CHECK((cub::DeviceRadixSort::SortPairs(scratch, scratch_bytes, tokens, tokens_out, positions, positions_out,
                                                 n, 0, 32, stream)));
}

}  // namespace zt::cuda
