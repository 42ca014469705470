#pragma once
// Softmax + cross-entropy fused over logits of a padded vocabulary: rows are Vp wide, only the
// first V columns are real tokens; the padding columns take no part in the softmax.
#include <cstdint>

namespace zt::cpu {

// Saves lse[N] = log Σ_{v<V} exp(logits[n, v]) and returns the mean over the N rows of
// lse[n] - logits[n, targets[n]]. Targets must lie in [0, V).
float cross_entropy_forward(float* lse, const float* logits, const int32_t* targets, int N, int V, int Vp);

// Writes dlogits[n, v] = scale · (softmax(logits[n])[v] - [v == targets[n]]) for v < V and 0 for
// the padding columns. dlogits may be the logits buffer itself (computed in place).
// scale = dloss / N gives the gradient of dloss · mean loss.
void cross_entropy_backward(float* dlogits, const float* logits, const float* lse, const int32_t* targets,
                            float scale, int N, int V, int Vp);

}  // namespace zt::cpu
