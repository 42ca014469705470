#pragma once
// LayerNorm over the last dimension (eps 1e-5, GPT-2's layer_norm_epsilon), rows of C channels.
namespace zt::cpu {

constexpr float kLayerNormEps = 1e-5f;

// out[N, C] = (inp - mean) · rstd · weight + bias; saves mean[N] and rstd[N] for backward.
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int N, int C);

// Accumulates dinp[N, C], dweight[C] and dbias[C] (dweight/dbias may be null to skip them).
void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int N, int C);

}  // namespace zt::cpu
