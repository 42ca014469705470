#pragma once
// The mixture-of-experts operators of ModelOps (kernels/model_ops.hpp) over host fp32: the router's
// softmax and top-k, the grouping of tokens by expert and the weighted combination of the experts'
// outputs, and their backward. Every token is computed by one thread, its experts in index order:
// the same bits whatever the thread count.
#include <cstdint>

namespace zt::cpu {

void moe_route(float* probs, int32_t* experts, float* weights, const float* logits, int N, int E, int K,
               bool normalize);
void moe_gather(float* rows, const float* x, const int32_t* token, int R, int C);
void moe_combine(float* out, const float* y, const float* weights, const int32_t* row, int N, int K, int C);
void moe_combine_backward(float* dy, float* dweights, const float* dout, const float* y, const float* weights,
                          const int32_t* row, int N, int K, int C);
// accumulate: dx += the sum, else dx = the sum.
void moe_scatter(float* dx, const float* drows, const int32_t* row, int N, int K, int C, bool accumulate);
void moe_route_backward(float* dlogits, const float* dweights, const float* probs, const int32_t* experts,
                        const float* daux, int N, int E, int K, bool normalize);

// ModelOps's grouping and the load-balancing loss's statistics (kernels/model_ops.hpp), on the host.
void moe_group(int32_t* offsets, int32_t* token, int32_t* row, const int32_t* experts, int N, int E, int K);
void moe_route_stats(double* stats, const float* probs, const int32_t* experts, const int32_t* padding_from, int T,
                     int N, int E, int K);
void moe_aux_grad(float* daux, const double* stats, int L, int E, float scale);
void moe_aux_accumulate(double* acc, const double* stats, int L, int E);
void moe_zero_padding(float* x, const int32_t* padding_from, int B, int T, int width);

void moe_gate_add(float* out, const float* y, const float* gate, int N, int C);
void moe_gate_add_backward(float* dy, float* dgate, const float* dout, const float* y, const float* gate, int N,
                           int C);

}  // namespace zt::cpu
