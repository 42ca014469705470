#pragma once
// RMSNorm (the llama family's, as Hugging Face's LlamaRMSNorm in fp32): y = x · rstd · weight,
// rstd = 1 / sqrt(mean(x²) + eps), over rows of C channels; and the same per head of a packed
// grouped-query projection (Qwen3's q_norm and k_norm). weight_offset 1 scales by 1 + weight
// instead (Gemma's norms).
namespace zt::cpu {

// out[N, C]; saves rstd[N].
void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int N, int C, float eps,
                     float weight_offset = 0.0f);
// Accumulates dinp[N, C] and dweight[C] (may be null).
void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                      const float* rstd, int N, int C, float weight_offset = 0.0f);

// qkv [N, (NH + 2·NKV)·hd]: out gets the q heads normalised with q_weight[hd], the k heads with
// k_weight[hd], the v heads copied; rstd [N, NH + NKV].
void qk_norm_forward(float* out, float* rstd, const float* qkv, const float* q_weight, const float* k_weight, int N,
                     int NH, int NKV, int hd, float eps, float weight_offset = 0.0f);
// Accumulates dqkv (q and k heads through the norm, v heads passed through) and dq_weight,
// dk_weight (either may be null).
void qk_norm_backward(float* dqkv, float* dq_weight, float* dk_weight, const float* dout, const float* qkv,
                      const float* q_weight, const float* k_weight, const float* rstd, int N, int NH, int NKV, int hd,
                      float weight_offset = 0.0f);

}  // namespace zt::cpu
