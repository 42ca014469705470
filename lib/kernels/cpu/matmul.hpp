#pragma once
// Fully connected layer: out = inp · W + bias over N rows (N = B·T).
namespace zt::cpu {

// How the weight matrix is stored.
//   InputMajor:  W is [C, OC], the Hugging Face Conv1D layout of every GPT-2 projection (y = x·W + b).
//   OutputMajor: W is [OC, C], so y = x·Wᵀ: the LM head reading the tied token embedding wte [Vp, C].
enum class WeightLayout { InputMajor, OutputMajor };

// out[N, OC] = inp[N, C] · W (+ bias[OC] when bias is not null). Overwrites out.
void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int C, int OC,
                    WeightLayout layout = WeightLayout::InputMajor);

// Accumulates the gradients of a forward call (each may be null to skip it):
//   dinp[N, C] += dout · Wᵀ,   dweight += inpᵀ · dout (in the weight's own layout),   dbias[OC] += Σ_rows dout.
void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int N, int C, int OC, WeightLayout layout = WeightLayout::InputMajor);

}  // namespace zt::cpu
