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

void moe_gate_add(float* out, const float* y, const float* gate, int N, int C);
void moe_gate_add_backward(float* dy, float* dgate, const float* dout, const float* y, const float* gate, int N,
                           int C);

}  // namespace zt::cpu
