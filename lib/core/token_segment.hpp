#pragma once
// The sample a token belongs to, as the kernels read it: positions [begin, end) of its batch row
// (docs/architecture.md, "Packed rows"). A table of these, [B, T] row-major, tells attention which
// keys a query may see ([begin, t]: causal inside the sample) and the embeddings their position
// (t - begin): a few integer operations per row, no dense mask. Operators take the table as a
// `const TokenSegment*` in the device's memory; null means every row is one sample.
#include <cstdint>

namespace zt {

struct TokenSegment {
  int32_t begin, end;
};
static_assert(sizeof(TokenSegment) == 2 * sizeof(int32_t), "the kernels read two int32 per token");

}  // namespace zt
