#pragma once
// The mixture-of-experts operators on the GPU (kernels/model_ops.hpp's moe_*, kernels/cpu/moe.hpp's
// semantics): the router's softmax and top-k, the gather of each expert's tokens, the weighted
// combination of the experts' outputs, the gated shared expert, and their backward. Activations in
// fp32 or bf16 (dt); the router's probabilities and top-k weights always fp32, whatever dt, as
// transformers computes them (softmax in fp32, the top-k and its renormalisation on those fp32 values).
// The experts' own GEMMs are the matmul's (model/moe_block.cpp runs one per expert over its rows).
// Tricks: none beyond one thread per token for the router (E and K are small: the softmax, the
// top-k by K passes over E, then the K written in index order, all in registers, sums in the CPU's
// order), one thread per 8 channels for the copies and weighted sums (experts added in index order,
// in fp32, rounded once), and one warp per dot product (the top-k weights' and the shared gate's
// gradients) with the deterministic warp butterfly.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.hpp"
#include "kernels/model_ops.hpp"  // GradInto

namespace zt::cuda {

// probs [N, E] (fp32) = softmax(logits [N, E] of dt); experts [N, K] the K most probable (ties to
// the lower index) in ascending index order; weights [N, K] (fp32) their probabilities, divided by
// their sum when `normalize`.
void moe_route(DType dt, float* probs, int32_t* experts, float* weights, const void* logits, int N, int E, int K,
               bool normalize, cudaStream_t stream);
// rows[r] = x[token[r]], [R, C].
void moe_gather(DType dt, void* rows, const void* x, const int32_t* token, int R, int C, cudaStream_t stream);
// out[n] = Σ_j weights[n, j] · y[row[n·K + j]], j ascending.
void moe_combine(DType dt, void* out, const void* y, const float* weights, const int32_t* row, int N, int K, int C,
                 cudaStream_t stream);
// dy[row[n·K + j]] = weights[n, j] · dout[n]; dweights[n, j] = dout[n] · y[row[n·K + j]] (fp32).
void moe_combine_backward(DType dt, void* dy, float* dweights, const void* dout, const void* y, const float* weights,
                          const int32_t* row, int N, int K, int C, cudaStream_t stream);
// dx[n] (+)= Σ_j drows[row[n·K + j]].
void moe_scatter(DType dt, void* dx, const void* drows, const int32_t* row, int N, int K, int C, GradInto dx_into,
                 cudaStream_t stream);
// dlogits [N, E] of dt (written over) through the renormalisation and the softmax, daux[E] (may be
// null) added to every token's d probs.
void moe_route_backward(DType dt, void* dlogits, const float* dweights, const float* probs, const int32_t* experts,
                        const float* daux, int N, int E, int K, bool normalize, cudaStream_t stream);
// out[n] += sigmoid(gate[n]) · y[n]; backward: dy[n] = sigmoid(gate[n]) · dout[n], dgate[n] =
// (dout[n] · y[n]) · sigmoid'(gate[n]), both written over.
void moe_gate_add(DType dt, void* out, const void* y, const void* gate, int N, int C, cudaStream_t stream);
void moe_gate_add_backward(DType dt, void* dy, void* dgate, const void* dout, const void* y, const void* gate, int N,
                           int C, cudaStream_t stream);

// The load-balancing loss's statistics (kernels/model_ops.hpp's moe_route_stats, moe_aux_grad,
// moe_aux_accumulate: the CPU's sums in the CPU's order, in double, one thread per expert) and
// the padding's rows set to zero.
void moe_route_stats(double* stats, const float* probs, const int32_t* experts, const int32_t* padding_from, int T,
                     int N, int E, int K, cudaStream_t stream);
void moe_aux_grad(float* daux, const double* stats, int L, int E, float scale, cudaStream_t stream);
void moe_aux_accumulate(double* acc, const double* stats, int L, int E, cudaStream_t stream);
void moe_zero_padding(DType dt, void* x, const int32_t* padding_from, int B, int T, int width, cudaStream_t stream);

}  // namespace zt::cuda
