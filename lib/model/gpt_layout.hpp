#pragma once
// Where GPT-2's parameters live in the flat buffer (docs/architecture.md, "Parameter groups and ParamHooks").
//   group 0 "embeddings": wte.weight [Vp, C] (vocabulary padded to a multiple of 128; rows from
//                         vocab_size on stay zero), wpe.weight [max_seq_len, C]
//   group 1 + l "h.l":    the tensors of BlockTensor below, in that order
//   group 1 + n_layer "ln_f": ln_f.weight [C], ln_f.bias [C]
// Names are the Hugging Face GPT-2 names; weights are stored input-major (y = x·W + b).
// weight_decay is true for 2-D tensors only.
#include <array>
#include <cstddef>

#include "core/param_layout.hpp"
#include "model/gpt_shape.hpp"

namespace zt {

// Throws zt::Error naming the model field that is invalid (e.g. model.n_head not dividing model.d_model).
void validate_gpt_shape(const GptShape& shape);

ParamLayout make_gpt_layout(const GptShape& shape);

// The tensors of one transformer block, in layout order.
enum class BlockTensor : int {
  Ln1Weight, Ln1Bias,           // ln_1.weight [C], ln_1.bias [C]
  AttnWeight, AttnBias,         // attn.c_attn.weight [C, 3C], attn.c_attn.bias [3C]
  AttnProjWeight, AttnProjBias, // attn.c_proj.weight [C, C], attn.c_proj.bias [C]
  Ln2Weight, Ln2Bias,           // ln_2.weight [C], ln_2.bias [C]
  FcWeight, FcBias,             // mlp.c_fc.weight [C, 4C], mlp.c_fc.bias [4C]
  FcProjWeight, FcProjBias,     // mlp.c_proj.weight [4C, C], mlp.c_proj.bias [C]
  Count
};
constexpr int kBlockTensorCount = int(BlockTensor::Count);

// Offsets of the block tensors from the start of their group (the same for every block).
using BlockOffsets = std::array<size_t, kBlockTensorCount>;
BlockOffsets gpt_block_offsets(int d_model);

// Group indices.
constexpr int kEmbeddingsGroup = 0;
inline int gpt_block_group(int layer) { return 1 + layer; }
inline int gpt_ln_f_group(const GptShape& shape) { return 1 + shape.n_layer; }

}  // namespace zt
