#pragma once
// Where a model's parameters live in the flat buffer (docs/architecture.md, "Parameter groups and ParamHooks"), by
// the Hugging Face names and shapes of its family: the names table a loader and an exporter read.
//
// gpt2 (Conv1D weights stored [in, out], y = x·W + b):
//   group 0 "embeddings": wte.weight [Vp, C], wpe.weight [max_seq_len, C]
//   group 1 + l "h.l":    h.l.ln_1.weight ... h.l.mlp.c_proj.bias (BlockRole order)
//   group 1 + L "ln_f":   ln_f.weight [C], ln_f.bias [C]
// llama, mistral, qwen2, qwen3 (nn.Linear weights stored [out, in], y = x·Wᵀ + b):
//   group 0 "embeddings":           model.embed_tokens.weight [Vp, C]
//   group 1 + l "model.layers.l":   model.layers.l.input_layernorm.weight [C],
//       self_attn.{q,k,v}_proj.weight [NH·hd | NKV·hd | NKV·hd, C] side by side (one packed
//       [(NH + 2·NKV)·hd, C] projection), their biases likewise (qkv bias), self_attn.q_norm.weight
//       and k_norm.weight [hd] (qwen3), self_attn.o_proj.weight [C, NH·hd] (+ bias [C]),
//       post_attention_layernorm.weight [C], mlp.{gate,up}_proj.weight [F, C] side by side (one
//       packed [2F, C] projection; + biases [F] each), mlp.down_proj.weight [C, F] (+ bias [C])
//       sparse blocks in place of the MLP: mlp.gate.weight [E, C] (the router), then for each
//       expert e mlp.experts.e.{gate,up}_proj.weight [I, C] (one packed [2I, C]) and
//       mlp.experts.e.down_proj.weight [C, I]; qwen2_moe then mlp.shared_expert.{gate,up}_proj
//       [S, C], down_proj [C, S] and mlp.shared_expert_gate.weight [1, C]; mixtral's are
//       block_sparse_moe.gate and block_sparse_moe.experts.e.{w1,w3,w2} (gate, up, down)
//   group 1 + L "norm":             model.norm.weight [C]
//   group 2 + L "lm_head":          lm_head.weight [Vp, C], only when the head is untied
// gemma2, gemma3_text: as llama, the block's norms input_layernorm, post_attention_layernorm (of
//   the attention output), pre_feedforward_layernorm (the MLP's input) and
//   post_feedforward_layernorm (of the MLP output), all [C]
// Vp is the vocabulary padded to a multiple of 128; rows from vocab_size on stay zero.
// weight_decay is true for 2-D tensors only.
#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/param_layout.hpp"
#include "model/gpt_shape.hpp"

namespace zt {

// Throws zt::Error naming the model field that is invalid (e.g. model.n_head not dividing model.d_model).
void validate_gpt_shape(const GptShape& shape);

ParamLayout make_gpt_layout(const GptShape& shape);

// The modules a family keeps in fp32 under a 16-bit dtype (data_types.keep_in_fp32_modules "auto"),
// as name patterns (model/name_pattern.hpp): the routers of a mixture of experts; none for dense models.
std::vector<std::string> fp32_module_patterns(const GptShape& shape);

// The tensors whose rows are the (padded) vocabulary: the token embedding, an untied LM head.
bool has_vocabulary_rows(std::string_view name);

// A tensor as a Hugging Face checkpoint of the family holds it, and where it lives in the flat
// buffer. The names are the layout's; only the vocabulary rows differ.
struct HfTensor {
  std::string name;           // "model.layers.0.self_attn.q_proj.weight"
  std::vector<size_t> shape;  // as in the checkpoint: the real vocabulary's rows, not the padded ones
  size_t offset = 0;          // first element in the flat buffer
  size_t padding = 0;         // elements after the checkpoint's that stay zero (padded vocabulary rows)
};
// Every tensor of make_gpt_layout(shape), in layout order. A tied head has no lm_head.weight here
// (a checkpoint may still hold a copy of the embedding under that name).
std::vector<HfTensor> hf_tensors(const GptShape& shape);

// The tensors a block may hold, by what the model does with them; a family holds a subset, in
// this order. Tensors of one role lie side by side (q, k and v projections; gate and up).
enum class BlockRole : int {
  Norm1Weight, Norm1Bias,    // ln_1 | input_layernorm
  QkvWeight, QkvBias,        // attn.c_attn | self_attn.{q,k,v}_proj
  QNormWeight, KNormWeight,  // self_attn.q_norm, self_attn.k_norm (qwen3)
  OutWeight, OutBias,        // attn.c_proj | self_attn.o_proj
  Norm2Weight, Norm2Bias,    // ln_2 | post_attention_layernorm
  FcWeight, FcBias,          // mlp.c_fc | mlp.{gate,up}_proj
  FcProjWeight, FcProjBias,  // mlp.c_proj | mlp.down_proj
  RouterWeight,              // mlp.gate | block_sparse_moe.gate (a sparse block, in place of the MLP)
  ExpertWeights,             // mlp.experts.E.{gate,up,down}_proj | block_sparse_moe.experts.E.{w1,w3,w2}
  SharedExpertWeights,       // mlp.shared_expert.{gate,up,down}_proj (qwen2_moe)
  SharedGateWeight,          // mlp.shared_expert_gate (qwen2_moe)
  PostAttnNormWeight,        // post_attention_layernorm (gemma: on the attention output)
  PostFfNormWeight,          // post_feedforward_layernorm (gemma)
  Count
};
constexpr int kBlockRoles = int(BlockRole::Count);
constexpr size_t kAbsent = ~size_t(0);
// Offset of each role's first element from the start of block `layer`'s group (the same for every
// block but in the MLP's part: a sparse block holds its router and experts there); kAbsent for a
// role the block does not have. experts_apart: the experts lie in a group of their own (expert
// parallelism, model/expert_layout.hpp), not in the block's.
using RoleOffsets = std::array<size_t, kBlockRoles>;
RoleOffsets block_role_offsets(const GptShape& shape, int layer = 0, bool experts_apart = false);

// Group indices.
constexpr int kEmbeddingsGroup = 0;
inline int gpt_block_group(int layer) { return 1 + layer; }
inline int gpt_ln_f_group(const GptShape& shape) { return 1 + shape.n_layer; }
// The group holding the LM head: the embeddings when tied, else its own after the final norm.
inline int gpt_head_group(const GptShape& shape) { return shape.tied_head ? kEmbeddingsGroup : 2 + shape.n_layer; }

}  // namespace zt
