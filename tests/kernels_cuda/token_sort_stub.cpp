// token_sort.hpp for the emulated build: a host stable sort in place of CUB's radix sort, queued
// on the stream like the kernels around it.
#include <algorithm>
#include <numeric>
#include <vector>

#include "emulated_device.hpp"
#include "kernels/cuda/token_sort.hpp"

namespace zt::cuda {

size_t sort_tokens_scratch_bytes(int) { return 0; }

void sort_tokens(void*, size_t, const uint32_t* tokens, uint32_t* tokens_out, const int32_t* positions,
                 int32_t* positions_out, int n, cudaStream_t stream) {
  emu::enqueue(stream, "sort_tokens", [=] {
    std::vector<int> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return tokens[a] < tokens[b]; });
    for (int i = 0; i < n; i++) {
      tokens_out[i] = tokens[order[size_t(i)]];
      positions_out[i] = positions[order[size_t(i)]];
    }
  });
}

}  // namespace zt::cuda
