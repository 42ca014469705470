#pragma once
// Softmax + cross-entropy fused over logits of a padded vocabulary: rows are Vp wide, only the
// first V columns are real tokens; the padding columns take no part in the softmax.
#include <cstddef>
#include <cstdint>

namespace zt::cpu {

// Saves lse[N] = log Σ_{v<V} exp(logits[n, v]) and losses[n] = lse[n] - logits[n, targets[n]]:
// targets lie in [0, V), or are kIgnoredTarget (core/ignored_target.hpp) for a row that carries no
// loss (NaN in losses).
void cross_entropy_losses(float* lse, float* losses, const float* logits, const int32_t* targets, int N, int V,
                          int Vp);

// The mean of losses[N] over the rows whose target counts, summed in double in row order; their
// number in *counted. NaN when no row counts (PyTorch's mean over no element).
float mean_loss(const float* losses, const int32_t* targets, int N, int* counted);

// Both: saves lse and returns the mean loss.
float cross_entropy_forward(float* lse, const float* logits, const int32_t* targets, int N, int V, int Vp);

// Writes dlogits[n, v] = scale · (softmax(logits[n])[v] - [v == targets[n]]) for v < V and 0 for
// the padding columns, and 0 over the whole row of an ignored target. dlogits may be the logits
// buffer itself (computed in place). scale = dloss / (rows that count) gives the gradient of
// dloss · mean loss.
// softcap > 0: logits are soft-capped (softcap_forward) and dlogits is the gradient of the logits
// before the cap. weights (N, or null): row n's scale is scale · weights[n] (each target's own
// weight in the loss: preference training).
void cross_entropy_backward(float* dlogits, const float* logits, const float* lse, const int32_t* targets,
                            float scale, int N, int V, int Vp, float softcap = 0.0f, const float* weights = nullptr);
// x = cap · tanh(x / cap) in place (Gemma's final_logit_softcapping).
void softcap_forward(float* x, size_t n, float cap);

// The rows whose target counts (ModelOps::counted_rows): rows[r] = the r-th n with
// targets[n] != kIgnoredTarget, row_targets[r] = targets[n]; returns their number.
int counted_rows(int32_t* rows, int32_t* row_targets, const int32_t* targets, int N);
// dx [N, C] = 0 but rows rows[r] = drows[r], r < M.
void scatter_rows(float* dx, const float* drows, const int32_t* rows, int M, int N, int C);

}  // namespace zt::cpu
