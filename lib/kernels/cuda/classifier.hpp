#pragma once
// Softmax + cross-entropy over logits of a padded vocabulary on the GPU (rows Vp wide, only the
// first V columns are real tokens; kernels/cpu/cross_entropy.hpp's semantics). Logits and their
// gradient are fp32 or bf16; lse, losses and the mean loss are always fp32.
// Trick (llm.c's fused classifier): one block per row; each thread keeps a running (max, sum of
// exp) over its share of the row, so the row is read once for the log-sum-exp; the fused form then
// overwrites the logits with their gradient in place on a second read, never storing the
// probabilities. Reductions use a fixed tree; the mean loss is summed in double by one block in a
// fixed order: the same logits always give the same bits. The model's operator table runs the
// passes apart (CudaModelOps): the losses of each chunk of rows in forward, the mean once, the
// gradient in backward, where the chunk's logits are computed again.
// Vector loads need Vp % 8 == 0 and 16-byte aligned logits; otherwise a scalar path runs.
// A target of kIgnoredTarget (core/ignored_target.hpp) carries no loss: its row's losses[n] is NaN
// and left out of the mean, and its gradient is 0. Any other target outside [0, V) makes that row's
// loss NaN (and its gradient lacks the -1): the kernels never index outside the row.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.hpp"

namespace zt::cuda {

// lse[n] = log Σ_{v<V} exp(logits[n, v]) and losses[n] = lse[n] - logits[n, targets[n]] (fp32, in
// device memory).
void classifier_losses(DType dt, float* lse, float* losses, const void* logits, const int32_t* targets, int N, int V,
                       int Vp, cudaStream_t stream);

// mean_loss[0] = the mean of losses[N] over the rows whose target counts, NaN when none does, and
// counted[0] = their number (unless counted is null).
void classifier_mean(float* mean_loss, int32_t* counted, const float* losses, const int32_t* targets, int N,
                     cudaStream_t stream);

// classifier_losses, then classifier_mean without the count.
void classifier_forward(DType dt, float* lse, float* losses, float* mean_loss, const void* logits,
                        const int32_t* targets, int N, int V, int Vp, cudaStream_t stream);

// dlogits[n, v] = scale · (softmax(logits[n])[v] - [v == targets[n]]) for v < V, 0 for the padding
// columns, from the lse of classifier_forward. dlogits may be logits (in place).
// An ignored target's row is 0. scale = dloss / (rows that count) gives the gradient of dloss ·
// mean loss.
void classifier_backward(DType dt, void* dlogits, const void* logits, const float* lse, const int32_t* targets,
                         float scale, int N, int V, int Vp, cudaStream_t stream);
// The same with scale = dloss / counted[0] (0 when counted[0] is 0), counted[0] read by the kernel
// when it runs: a captured graph replays with the count of the rows it is replayed for.
// softcap > 0: the logits are soft-capped (softcap_forward) and dlogits is the gradient of the
// logits before the cap. weights (device memory, N floats, or null): row n's scale is dloss ·
// weights[n] instead, counted not read (ModelOps::cross_entropy_backward).
void classifier_backward(DType dt, void* dlogits, const void* logits, const float* lse, const int32_t* targets,
                         const int32_t* counted, float dloss, int N, int V, int Vp, cudaStream_t stream,
                         float softcap = 0.0f, const float* weights = nullptr);
// x[n] = cap · tanh(x / cap) in place (Gemma's final_logit_softcapping).
void softcap_forward(DType dt, void* x, size_t n, float cap, cudaStream_t stream);

// The LM head's rows that count (ModelOps::counted_rows, scatter_rows): rows[r] the r-th n < N
// whose target is not kIgnoredTarget, row_targets[r] its target (one block scans the targets in
// order); dx [N, C] written over with zeros but rows[r] = drows[r], rows of C elements of dt.
void counted_rows(int32_t* rows, int32_t* row_targets, const int32_t* targets, int N, cudaStream_t stream);
void scatter_rows(DType dt, void* dx, const void* drows, const int32_t* rows, int M, int N, int C,
                  cudaStream_t stream);

// sum[0] += double(mean_loss[0]) · weight in double: the weighted losses of several micro-batches
// kept on the device.
void add_mean_loss(double* sum, const float* mean_loss, double weight, cudaStream_t stream);

// Both in one pass: writes lse, losses and mean_loss as classifier_forward does, and replaces the
// logits with the dlogits of classifier_backward.
void classifier_fused(DType dt, void* logits, float* lse, float* losses, float* mean_loss, const int32_t* targets,
                      float scale, int N, int V, int Vp, cudaStream_t stream);

}  // namespace zt::cuda
