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

namespace zt {

enum class ModelType { Gpt2, Llama, Mistral, Qwen2, Qwen3, Gemma2, Gemma3Text };
std::string_view model_type_name(ModelType t);                 // "gpt2", "llama", ...
std::optional<ModelType> model_type_from_name(std::string_view);  // exact Hugging Face spelling
const std::vector<std::string>& model_type_names();             // every model_type, in enum order

// How a layer attends (transformers' layer_types): to every earlier key of its sample, or to the
// last sliding_window of them.
enum class LayerAttention { Full, Sliding };
std::string_view layer_attention_name(LayerAttention a);                     // "full_attention", "sliding_attention"
std::optional<LayerAttention> layer_attention_from_name(std::string_view);  // exact Hugging Face spelling

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
};
FamilyOptions family_options(ModelType type);
inline bool is_gemma(ModelType t) { return t == ModelType::Gemma2 || t == ModelType::Gemma3Text; }

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
  // Gemma: attention scores scaled by query_pre_attn_scalar^-0.5 (0: head_dim's), soft-capping of
  // the attention scores and of the final logits (0: none), and the rotary base of the sliding
  // layers (gemma3_text's rope_local_base_freq; 0: rope_theta).
  double query_pre_attn_scalar = 0.0;
  double attn_logit_softcapping = 0.0;
  double final_logit_softcapping = 0.0;
  double rope_local_base_freq = 0.0;

  bool operator==(const GptShape&) const = default;

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

  // Elements of one block's parameters.
  size_t block_params() const;
  // Trainable parameters as exported (unpadded vocabulary; a tied head counted once).
  size_t num_params() const;
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
