#pragma once
// The rotary embeddings' inverse frequencies of a shape, as transformers computes them in fp32
// (modeling_rope_utils.py): inv_freq[i] = 1 / rope_theta^(2i / head_dim) for i < head_dim / 2, then
// rope_scaling "llama3" (Llama 3.1): wavelengths 2π / inv_freq above original_max / low_freq_factor
// are divided by factor, those below original_max / high_freq_factor kept, those between
// interpolated smoothly; rope_scaling "linear": every frequency divided by factor.
#include <vector>

#include "model/gpt_shape.hpp"

namespace zt {

std::vector<float> rope_inverse_frequencies(const GptShape& shape);

}  // namespace zt
