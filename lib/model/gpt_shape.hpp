#pragma once
// The architecture of a decoder-only transformer ("GPT" in the generic sense) as data: its family
// (the Hugging Face model_type), its sizes and the few switches its blocks differ by, the presets,
// and its parameter count. GPT-2 is the default: a shape written {n_layer, n_head, d_model,
// vocab_size, max_seq_len} is GPT-2's.
//
//   gpt2:    LayerNorm (eps 1e-5) with bias, learned positions, fused qkv with bias, GELU MLP with
//            bias, LM head tied to the token embedding, Conv1D weights [in, out]
//   llama,   RMSNorm (norm_eps), rotary positions (rope_theta, rope_scaling), grouped-query
//   mistral: attention (n_kv_head), SwiGLU MLP (d_ff), nn.Linear weights [out, in]; no bias unless
//            attention_bias (q, k, v and o) or mlp_bias (llama only); tied or untied head
//   qwen2:   llama + q, k and v bias (never o)
//   qwen3:   llama + RMSNorm of each q and k head before the rotation; head_dim free of d_model
//   qwen3_moe: qwen3 whose sparse layers (GptShape::sparse) replace the MLP by a router over
//            num_experts SwiGLU experts of moe_intermediate_size (model/moe_block.hpp)
//   qwen2_moe: qwen2 (no window) with qwen3_moe's experts plus a shared expert of
//            shared_expert_intermediate_size scaled by a sigmoid gate
//   mixtral: mistral (no window) whose every layer holds experts of d_ff, weights always renormalised
//   olmoe:   llama whose every layer holds experts of d_ff (renormalised with norm_topk_prob), and
//            q/k RMSNorms over the whole projected q and k (weights [n_head·head_dim], [n_kv_head·head_dim])
//   gemma2:  llama with (1 + w) RMSNorms computed in fp32, four per block (the attention and MLP
//            outputs normed before the residual add), embeddings times sqrt(d_model), attention
//            scale query_pre_attn_scalar^-0.5, attention and final logits soft-capped, GeGLU
//            (GELU's tanh form), even layers sliding
//   gemma3_text: gemma2 + q/k norms, rope_local_base_freq on the sliding layers (rope_theta and
//            rope_scaling on the full ones), no attention soft-capping
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/name_table.hpp"

namespace zt {

enum class ModelType { Gpt2, Llama, Mistral, Qwen2, Qwen3, Qwen3Moe, Qwen2Moe, Mixtral, Gemma2, Gemma3Text, Olmoe };
// Hugging Face's model_type spellings, exact.
inline constexpr auto kModelTypeNames =
    name_table<ModelType>({{ModelType::Gpt2, "gpt2"}, {ModelType::Llama, "llama"}, {ModelType::Mistral, "mistral"},
                           {ModelType::Qwen2, "qwen2"}, {ModelType::Qwen3, "qwen3"},
                           {ModelType::Qwen3Moe, "qwen3_moe"}, {ModelType::Qwen2Moe, "qwen2_moe"},
                           {ModelType::Mixtral, "mixtral"}, {ModelType::Gemma2, "gemma2"},
                           {ModelType::Gemma3Text, "gemma3_text"}, {ModelType::Olmoe, "olmoe"}});

// How a layer attends (transformers' layer_types): to every earlier key of its sample, or to the
// last sliding_window of them.
enum class LayerAttention { Full, Sliding };
inline constexpr auto kLayerAttentionNames = name_table<LayerAttention>(
    {{LayerAttention::Full, "full_attention"}, {LayerAttention::Sliding, "sliding_attention"}});

// rope_scaling of a Hugging Face config: none ("default"), Llama 3.1's frequency-dependent
// interpolation ("llama3"), or every frequency divided by factor ("linear").
enum class RopeType { Default, Llama3, Linear };
struct RopeScaling {
  RopeType type = RopeType::Default;
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int original_max_position_embeddings = 0;
  bool operator==(const RopeScaling&) const = default;
};

// How a block computes: what the family and its switches make of it.
struct BlockRecipe {
  bool rms_norm;           // RMSNorm without bias; else LayerNorm with bias
  bool rotary;             // rotary positions on q and k; else learned position embeddings (wpe)
  bool swiglu;             // down(silu(gate(x)) · up(x)); else c_proj(gelu(c_fc(x)))
  bool output_major;       // nn.Linear weights [out, in]; else Conv1D [in, out]
  bool qkv_bias, o_bias, mlp_bias;
  bool qk_norm;            // RMSNorm over each q and k head (weights [head_dim])
  bool qk_norm_whole;      // the q/k norms over the whole projected q and k instead (OLMoE)
  // Gemma: norms scale by 1 + w; the attention and MLP outputs are normed before the residual add
  // (post_attention_layernorm, post_feedforward_layernorm); embeddings times sqrt(d_model); the
  // gate's activation GELU's tanh form (GeGLU).
  bool gemma;
};

// The options a family's transformers config class has; the rest of its architecture is fixed.
struct FamilyOptions {
  bool attention_bias;  // llama, qwen3: q, k, v and o biases (qwen2 always has q, k, v biases)
  bool mlp_bias;        // llama
  bool sliding_window;  // mistral, qwen2, qwen3
  bool rotary;          // every family but gpt2 (rope_theta, rope_scaling)
  bool experts;         // qwen3_moe, qwen2_moe, mixtral, olmoe: the MoeShape keys
  bool sparse_layers;   // qwen3_moe, qwen2_moe: decoder_sparse_step, mlp_only_layers, moe_intermediate_size
                        // (mixtral, olmoe: every layer sparse, d_ff wide)
  bool norm_topk_prob;  // qwen3_moe, qwen2_moe, olmoe (mixtral always renormalises)
};
FamilyOptions family_options(ModelType type);
inline bool is_gemma(ModelType t) { return t == ModelType::Gemma2 || t == ModelType::Gemma3Text; }
// The layers Gemma2Config and Gemma3TextConfig make slide when layer_types is not given: gemma2 the
// even ones, gemma3_text all but every `pattern`-th (sliding_window_pattern, 6 by default).
std::vector<LayerAttention> gemma_layer_types(ModelType t, int n_layer, int pattern = 6);

// The mixture-of-experts part of a shape (transformers' Qwen3MoeConfig keys). num_experts 0: every
// layer dense.
struct MoeShape {
  int num_experts = 0;
  int top_k = 0;                // num_experts_per_tok
  int d_expert = 0;             // moe_intermediate_size: each expert's SwiGLU width (mixtral: d_ff)
  int d_shared = 0;             // qwen2_moe's shared_expert_intermediate_size; 0: no shared expert
  bool norm_topk_prob = false;  // the top-k weights divided by their sum
  int decoder_sparse_step = 1;  // layer i is sparse iff (i + 1) % step == 0 and i is not in mlp_only_layers
  std::vector<int> mlp_only_layers;
  bool output_router_logits = false;  // the load-balancing loss joins the loss
  double router_aux_loss_coef = 0.001;
  bool operator==(const MoeShape&) const = default;
  bool enabled() const { return num_experts > 0; }
};

struct GptShape {
  GptShape() = default;
  // A GPT-2 shape; the architecture fields keep their defaults.
  GptShape(int layers, int heads, int width, int vocab, int positions)
      : n_layer(layers), n_head(heads), d_model(width), vocab_size(vocab), max_seq_len(positions) {}

  int n_layer = 0;
  int n_head = 0;
  int d_model = 0;
  int vocab_size = 0;   // as the user sees it; padded to a multiple of 128 inside the model
  int max_seq_len = 0;
  ModelType model_type = ModelType::Gpt2;
  int n_kv_head = 0;    // key/value heads (grouped-query attention); 0: n_head
  int head_dim = 0;     // 0: d_model / n_head
  int d_ff = 0;         // width of the MLP's hidden layer; 0: 4·d_model
  double norm_eps = 1e-5;       // RMSNorm's epsilon (GPT-2's LayerNorm always uses 1e-5)
  double rope_theta = 10000.0;  // base of the rotary frequencies
  RopeScaling rope_scaling;
  bool attention_bias = false;  // llama, qwen3: q, k, v and o projections have a bias
  bool mlp_bias = false;        // llama: gate, up and down projections have a bias
  bool tied_head = true;        // the LM head is the token embedding (tie_word_embeddings)
  int sliding_window = 0;       // attention window of the sliding layers (mistral, qwen2, qwen3); 0: none
  // Which layers slide, one per layer; empty: every layer (when sliding_window > 0). mistral slides
  // every layer.
  std::vector<LayerAttention> layer_types;
  MoeShape moe;  // the families with experts only
  // Gemma: attention scores scaled by query_pre_attn_scalar^-0.5 (0: head_dim's), soft-capping of
  // the attention scores and of the final logits (0: none), and the rotary base of the sliding
  // layers (gemma3_text's rope_local_base_freq; 0: rope_theta).
  double query_pre_attn_scalar = 0.0;
  double attn_logit_softcapping = 0.0;
  double final_logit_softcapping = 0.0;
  double rope_local_base_freq = 0.0;

  bool operator==(const GptShape&) const = default;

  // Whether layer `layer`'s MLP is a mixture of experts (transformers' Qwen3MoeDecoderLayer rule).
  bool sparse(int layer) const;
  // Each expert's SwiGLU width (mixtral's and olmoe's experts are d_ff wide).
  int expert_width() const { return family_options(model_type).sparse_layers ? moe.d_expert : ff_width(); }
  // Whether the top-k weights are divided by their sum (mixtral always).
  bool renormalises() const { return model_type == ModelType::Mixtral || moe.norm_topk_prob; }

  int padded_vocab() const { return (vocab_size + 127) / 128 * 128; }
  int kv_heads() const { return n_kv_head > 0 ? n_kv_head : n_head; }
  int head_size() const { return head_dim > 0 ? head_dim : (n_head > 0 ? d_model / n_head : 0); }
  int ff_width() const { return d_ff > 0 ? d_ff : 4 * d_model; }
  int q_width() const { return n_head * head_size(); }                      // attention output, o_proj input
  // The keys a query of layer `layer` attends to at most: sliding_window for a sliding layer, 0
  // (every earlier key of its sample) for a full one.
  int layer_window(int layer) const {
    if (sliding_window <= 0) return 0;
    return layer_types.empty() || layer_types[size_t(layer)] == LayerAttention::Sliding ? sliding_window : 0;
  }
  int qkv_width() const { return (n_head + 2 * kv_heads()) * head_size(); }  // the packed projection
  BlockRecipe recipe() const;
  // The same shape with every derived size (0 above) written out, and layer_types empty where it
  // says nothing (no window, or every layer sliding).
  GptShape resolved() const;

  // Elements of one block's parameters (block `layer`'s: a sparse block holds its router and experts).
  size_t block_params(int layer = 0) const;
  // The largest block's.
  size_t max_block_params() const;
  // Trainable parameters as exported (unpadded vocabulary; a tied head counted once).
  size_t num_params() const;
  // The parameters a token's forward multiplies by: num_params less, in each sparse layer, the
  // experts it is not routed to (num_experts - top_k of them).
  size_t active_params() const;
  // The same in floating point, which does not overflow for absurd sizes.
  double num_params_approx() const;
  // Elements of the flat parameter buffer: num_params plus the zero rows that pad the vocabulary
  // of the token embedding and of an untied LM head.
  size_t flat_size() const;
};

// What is wrong with the family-specific part of a shape (grouped-query heads, head_dim, d_ff,
// norm_eps, rotary settings, biases, tied head, sliding window): the model key and why, or none.
// (validate_gpt_shape in gpt_layout.hpp checks the sizes too and throws.)
struct ShapeProblem {
  std::string key;   // "n_kv_head", "rope_scaling.factor", ...
  std::string what;  // "3 does not divide n_head 4 (expected a divisor of n_head ...)"
};
std::optional<ShapeProblem> architecture_problem(const GptShape& shape);

// "Llama 2 layers, 4 heads (2 key/value) of 16, d_model 64, d_ff 176, vocab 256, 128 positions"
std::string describe(const GptShape& shape);

struct GptPreset {
  const char* name;
  GptShape shape;
};

// GPT-2's presets first, then the other families' (shapes only: nothing is downloaded).
const std::vector<GptPreset>& gpt_presets();
std::optional<GptShape> gpt_preset(const std::string& name);

}  // namespace zt
