#include "kernels/cpu/embedding.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "kernels/cpu/kernel_profile.hpp"

namespace zt::cpu {

namespace {
// The position of token bt of [B, T]: restarting at 0 with each sample.
int position(int bt, int T, const TokenSegment* segments) { return bt % T - (segments ? segments[bt].begin : 0); }
}  // namespace

void embedding_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe, int B, int T, int C,
                       const TokenSegment* segments) {
  KernelTimer timer(KernelKind::EmbeddingForward);
#pragma omp parallel for schedule(static)
  for (int bt = 0; bt < B * T; bt++) {
    const float* tok = wte + size_t(tokens[bt]) * C;
    float* y = out + size_t(bt) * C;
    if (!wpe) {
      std::memcpy(y, tok, sizeof(float) * size_t(C));
      continue;
    }
    const float* pos = wpe + size_t(position(bt, T, segments)) * C;
#pragma omp simd
    for (int c = 0; c < C; c++) y[c] = tok[c] + pos[c];
  }
}

void embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int B, int T, int C,
                        const TokenSegment* segments) {
  KernelTimer timer(KernelKind::EmbeddingBackward);
  // A token may repeat, so rows of dwte would collide across threads: split the channels instead;
  // every thread walks all positions in order (deterministic for any thread count).
  constexpr int kChannelBlock = 64;
  const int blocks = (C + kChannelBlock - 1) / kChannelBlock;
#pragma omp parallel for schedule(static)
  for (int blk = 0; blk < blocks; blk++) {
    const int c0 = blk * kChannelBlock, c1 = std::min(C, c0 + kChannelBlock);
    for (int bt = 0; bt < B * T; bt++) {
      const float* dy = dout + size_t(bt) * C;
      if (dwte) {
        float* dtok = dwte + size_t(tokens[bt]) * C;
        for (int c = c0; c < c1; c++) dtok[c] += dy[c];
      }
      if (dwpe) {
        float* dpos = dwpe + size_t(position(bt, T, segments)) * C;
        for (int c = c0; c < c1; c++) dpos[c] += dy[c];
      }
    }
  }
}

}  // namespace zt::cpu
