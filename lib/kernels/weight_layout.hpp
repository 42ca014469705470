#pragma once
// How a fully connected layer's weight matrix is stored.
namespace zt {

//   InputMajor:  W is [C, OC], the Hugging Face Conv1D layout of every GPT-2 projection (y = x·W + b).
//   OutputMajor: W is [OC, C], so y = x·Wᵀ: torch's nn.Linear (every projection of the llama family,
//                its LM head) and the LM head reading the tied token embedding [Vp, C].
enum class WeightLayout { InputMajor, OutputMajor };

}  // namespace zt
