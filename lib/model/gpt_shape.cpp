#include "model/gpt_shape.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace zt {

FamilyOptions family_options(ModelType t) {
  const bool llama = t == ModelType::Llama, gpt2 = t == ModelType::Gpt2;
  const bool qwen_moe = t == ModelType::Qwen3Moe || t == ModelType::Qwen2Moe, olmoe = t == ModelType::Olmoe;
  const bool moe = qwen_moe || t == ModelType::Mixtral || olmoe;
  const bool qwen3 = t == ModelType::Qwen3 || t == ModelType::Qwen3Moe;
  const bool gemma = is_gemma(t);
  return {llama || qwen3 || gemma || olmoe, llama, !llama && !gpt2 && !moe, !gpt2, moe, qwen_moe, qwen_moe || olmoe};
}

bool GptShape::sparse(int layer) const {
  if (!moe.enabled() || moe.decoder_sparse_step <= 0) return false;
  const auto& dense = moe.mlp_only_layers;
  return std::find(dense.begin(), dense.end(), layer) == dense.end() && (layer + 1) % moe.decoder_sparse_step == 0;
}

BlockRecipe GptShape::recipe() const {
  const ModelType t = model_type;
  if (t == ModelType::Gpt2) return {false, false, false, false, true, true, true, false, false, false};
  BlockRecipe r{true, true, true, true, false, false, false, false, false, false};
  // As modeling_llama.py, modeling_mistral.py, modeling_qwen2.py, modeling_qwen3.py and
  // modeling_olmoe.py build them.
  const FamilyOptions options = family_options(t);
  r.qkv_bias = t == ModelType::Qwen2 || t == ModelType::Qwen2Moe || (options.attention_bias && attention_bias);
  r.o_bias = options.attention_bias && attention_bias;
  r.mlp_bias = options.mlp_bias && mlp_bias;
  r.qk_norm = t == ModelType::Qwen3 || t == ModelType::Qwen3Moe || t == ModelType::Gemma3Text || t == ModelType::Olmoe;
  r.qk_norm_whole = t == ModelType::Olmoe;
  r.gemma = is_gemma(t);
  return r;
}

std::vector<LayerAttention> gemma_layer_types(ModelType t, int n_layer, int pattern) {
  const int every = t == ModelType::Gemma2 ? 2 : pattern;
  std::vector<LayerAttention> types;
  for (int i = 0; i < n_layer; ++i)
    types.push_back((i + 1) % every != 0 ? LayerAttention::Sliding : LayerAttention::Full);
  return types;
}

GptShape GptShape::resolved() const {
  GptShape s = *this;
  s.n_kv_head = kv_heads();
  s.head_dim = head_size();
  s.d_ff = ff_width();
  const bool all_slide = std::all_of(s.layer_types.begin(), s.layer_types.end(),
                                     [](LayerAttention a) { return a == LayerAttention::Sliding; });
  if (s.sliding_window == 0 || all_slide) s.layer_types.clear();
  return s;
}

namespace {

// The parameter count in N: size_t for the count, double for judging absurd shapes without
// overflowing.
template <typename N>
N block_params_in(const GptShape& s, int layer) {
  const BlockRecipe r = s.recipe();
  const N C = N(s.d_model), hd = N(s.head_size()), F = s.d_ff > 0 ? N(s.d_ff) : 4 * C;
  const N QKV = (N(s.n_head) + 2 * N(s.kv_heads())) * hd, Q = N(s.n_head) * hd;
  const N norms = r.rms_norm ? (r.gemma ? 4 * C : 2 * C) : 4 * C;
  const N qk_norms = !r.qk_norm ? 0 : r.qk_norm_whole ? Q + N(s.kv_heads()) * hd : 2 * hd;
  const N attention = C * QKV + (r.qkv_bias ? QKV : 0) + qk_norms + Q * C + (r.o_bias ? C : 0);
  const N mlp = r.swiglu ? 3 * C * F + (r.mlp_bias ? 2 * F + C : 0) : 2 * C * F + F + C;
  const N E = N(s.moe.num_experts), S = N(s.moe.d_shared);
  // the router, each expert's SwiGLU, and a shared expert with its gate
  const N experts = E * C + E * 3 * C * N(s.expert_width()) + (S > 0 ? 3 * C * S + C : 0);
  return norms + attention + (s.sparse(layer) ? experts : mlp);
}

template <typename N>
N num_params_in(const GptShape& s) {
  const N C = N(s.d_model), V = N(s.vocab_size);
  const BlockRecipe r = s.recipe();
  const N embeddings = V * C + (r.rotary ? 0 : N(s.max_seq_len) * C);
  const N final_norm = r.rms_norm ? C : 2 * C;
  N blocks = 0;
  if (s.moe.enabled())
    for (int l = 0; l < s.n_layer; ++l) blocks += block_params_in<N>(s, l);
  else
    blocks = N(s.n_layer) * block_params_in<N>(s, 0);
  return embeddings + blocks + final_norm + (s.tied_head ? 0 : V * C);
}

}  // namespace

size_t GptShape::block_params(int layer) const { return block_params_in<size_t>(*this, layer); }
size_t GptShape::max_block_params() const {
  size_t most = 0;
  for (int l = 0; l < std::max(n_layer, 1); ++l) most = std::max(most, block_params(l));
  return most;
}
size_t GptShape::num_params() const { return num_params_in<size_t>(*this); }
double GptShape::num_params_approx() const { return num_params_in<double>(*this); }

size_t GptShape::active_params() const {
  size_t idle = 0;
  const size_t expert = 3 * size_t(d_model) * size_t(expert_width());
  for (int l = 0; l < n_layer; ++l)
    if (sparse(l)) idle += size_t(moe.num_experts - moe.top_k) * expert;
  return num_params() - idle;
}

size_t GptShape::flat_size() const {
  const size_t pad_rows = size_t(padded_vocab() - vocab_size) * size_t(d_model);
  return num_params() + pad_rows * (tied_head ? 1 : 2);
}

namespace {

bool is_gpt2(const GptShape& s) { return s.model_type == ModelType::Gpt2; }

std::optional<ShapeProblem> rope_problem(const GptShape& s) {
  const RopeScaling& r = s.rope_scaling;
  if (is_gpt2(s)) {
    if (r.type != RopeType::Default)
      return ShapeProblem{"rope_scaling", "GPT-2 has learned positions, no rotary embeddings to scale"};
    return std::nullopt;
  }
  if (!(s.rope_theta > 0)) return ShapeProblem{"rope_theta", fmt::format("{} (expected > 0)", s.rope_theta)};
  if (s.rope_local_base_freq != 0 && !(s.rope_local_base_freq > 0))
    return ShapeProblem{"rope_local_base_freq", fmt::format("{} (expected > 0)", s.rope_local_base_freq)};
  if (s.rope_local_base_freq > 0 && s.model_type != ModelType::Gemma3Text)
    return ShapeProblem{"rope_local_base_freq", fmt::format("{} has no rotary base of its own for sliding layers "
                                                            "(only gemma3_text does)",
                                                            kModelTypeNames.name(s.model_type))};
  if (r.type == RopeType::Default) return std::nullopt;
  if (!(r.factor > 0)) return ShapeProblem{"rope_scaling.factor", fmt::format("{} (expected > 0)", r.factor)};
  if (r.type == RopeType::Linear) return std::nullopt;
  if (!(r.low_freq_factor > 0))
    return ShapeProblem{"rope_scaling.low_freq_factor", fmt::format("{} (expected > 0)", r.low_freq_factor)};
  if (!(r.high_freq_factor > r.low_freq_factor))
    return ShapeProblem{"rope_scaling.high_freq_factor",
                        fmt::format("{} is not above low_freq_factor {} (expected high_freq_factor > low_freq_factor)",
                                    r.high_freq_factor, r.low_freq_factor)};
  if (r.original_max_position_embeddings <= 0)
    return ShapeProblem{"rope_scaling.original_max_position_embeddings",
                        fmt::format("{} (expected > 0: the context length the model was pretrained with)",
                                    r.original_max_position_embeddings)};
  return std::nullopt;
}

std::optional<ShapeProblem> moe_problem(const GptShape& s, const FamilyOptions& options) {
  const MoeShape& m = s.moe;
  const std::string type(kModelTypeNames.name(s.model_type));
  if (!options.experts) {
    if (m.enabled())
      return ShapeProblem{"num_experts",
                          fmt::format("{} has no experts (expected 0; qwen3_moe, qwen2_moe, mixtral and olmoe have)",
                                      type)};
    return std::nullopt;
  }
  if (m.num_experts < 0) return ShapeProblem{"num_experts", fmt::format("{} (expected >= 0)", m.num_experts)};
  if (!m.enabled()) return std::nullopt;
  if (!(m.router_aux_loss_coef >= 0))
    return ShapeProblem{"router_aux_loss_coef", fmt::format("{} (expected >= 0)", m.router_aux_loss_coef)};
  if (m.top_k < 1 || m.top_k > m.num_experts)
    return ShapeProblem{"num_experts_per_tok",
                        fmt::format("{} (expected 1 to num_experts {})", m.top_k, m.num_experts)};
  if (!options.sparse_layers) {  // mixtral, olmoe
    if (m.norm_topk_prob && !options.norm_topk_prob)
      return ShapeProblem{"norm_topk_prob", fmt::format("{} always renormalises (expected false)", type)};
    if (m.d_expert != 0 || m.d_shared != 0 || m.decoder_sparse_step != 1 || !m.mlp_only_layers.empty())
      return ShapeProblem{"num_experts", fmt::format("{} has experts of d_ff in every layer "
                                                     "(expected no moe_intermediate_size, "
                                                     "shared_expert_intermediate_size, "
                                                     "decoder_sparse_step or mlp_only_layers)",
                                                     type)};
    return std::nullopt;
  }
  if (m.d_expert <= 0)
    return ShapeProblem{"moe_intermediate_size", fmt::format("{} (expected > 0)", m.d_expert)};
  if (m.d_shared < 0 || (m.d_shared > 0 && s.model_type != ModelType::Qwen2Moe))
    return ShapeProblem{"shared_expert_intermediate_size",
                        fmt::format("{} (expected > 0 for qwen2_moe, 0 for none)", m.d_shared)};
  if (m.decoder_sparse_step <= 0)
    return ShapeProblem{"decoder_sparse_step", fmt::format("{} (expected > 0)", m.decoder_sparse_step)};
  for (int l : m.mlp_only_layers)
    if (l < 0 || l >= s.n_layer)
      return ShapeProblem{"mlp_only_layers", fmt::format("layer {} is not one of the {} layers", l, s.n_layer)};
  return std::nullopt;
}

}  // namespace

std::optional<ShapeProblem> architecture_problem(const GptShape& s) {
  const std::string type(kModelTypeNames.name(s.model_type));
  const bool gpt2 = is_gpt2(s);
  if (s.n_kv_head < 0) return ShapeProblem{"n_kv_head", fmt::format("{} (expected > 0, or 0 for n_head)", s.n_kv_head)};
  if (gpt2 && s.n_kv_head != 0 && s.n_kv_head != s.n_head)
    return ShapeProblem{"n_kv_head", fmt::format("{}: GPT-2 has one key/value head per attention head (expected {})",
                                                 s.n_kv_head, s.n_head)};
  if (s.n_kv_head > 0 && (s.n_kv_head > s.n_head || s.n_head % s.n_kv_head != 0))
    return ShapeProblem{"n_kv_head", fmt::format("{} does not divide n_head {} (expected a divisor of n_head: 1 for "
                                                 "multi-query attention up to n_head for multi-head attention)",
                                                 s.n_kv_head, s.n_head)};
  if (s.head_dim < 0)
    return ShapeProblem{"head_dim", fmt::format("{} (expected > 0, or 0 for d_model / n_head)", s.head_dim)};
  if (gpt2 && s.head_dim != 0 && s.n_head > 0 && int64_t(s.head_dim) * s.n_head != s.d_model)
    return ShapeProblem{"head_dim", fmt::format("{}: GPT-2's heads are d_model / n_head = {} wide", s.head_dim,
                                                s.n_head > 0 ? s.d_model / s.n_head : 0)};
  if (!gpt2 && s.head_size() % 2 != 0)
    return ShapeProblem{"head_dim", fmt::format("{} is odd (rotary embeddings rotate the two halves of a head: "
                                                "expected an even head_dim)",
                                                s.head_size())};
  if (s.d_ff < 0) return ShapeProblem{"d_ff", fmt::format("{} (expected > 0, or 0 for 4 x d_model)", s.d_ff)};
  if (gpt2 && s.d_ff != 0 && s.d_ff != 4 * int64_t(s.d_model))
    return ShapeProblem{"d_ff",
                        fmt::format("{}: GPT-2's MLP is 4 x d_model = {} wide", s.d_ff, 4 * int64_t(s.d_model))};
  if (!(s.norm_eps > 0)) return ShapeProblem{"norm_eps", fmt::format("{} (expected > 0)", s.norm_eps)};
  if (gpt2 && s.norm_eps != 1e-5)
    return ShapeProblem{"norm_eps", fmt::format("{}: GPT-2's LayerNorm uses 1e-5", s.norm_eps)};
  if (auto p = rope_problem(s)) return p;
  const FamilyOptions options = family_options(s.model_type);
  if (s.attention_bias && !options.attention_bias)
    return ShapeProblem{
        "attention_bias",
        fmt::format(
            "{} has no such option (only llama, qwen3, gemma2 and gemma3_text do; gpt2 always has biases, qwen2 "
            "always q, k and v biases and no o bias, mistral none)",
            type)};
  if (s.mlp_bias && !options.mlp_bias)
    return ShapeProblem{"mlp_bias", fmt::format("{} has no such option (only llama does)", type)};
  if (gpt2 && !s.tied_head)
    return ShapeProblem{"tie_word_embeddings", "false: GPT-2's LM head is its token embedding (expected true)"};
  if (s.sliding_window < 0)
    return ShapeProblem{"sliding_window", fmt::format("{} (expected > 0, or 0 for none)", s.sliding_window)};
  if (s.sliding_window > 0 && !options.sliding_window)
    return ShapeProblem{"sliding_window", fmt::format("{} has no sliding-window attention (expected 0)", type)};
  if (auto p = moe_problem(s, options)) return p;
  if (s.recipe().qk_norm_whole && s.kv_heads() != s.n_head)
    return ShapeProblem{"n_kv_head", fmt::format("{} with {} key/value heads for {} heads is not implemented ({}'s "
                                                 "q/k norms over the whole q and k are implemented for multi-head "
                                                 "attention: expected n_kv_head {})",
                                                 s.n_kv_head, s.kv_heads(), s.n_head, type, s.n_head)};
  if (s.recipe().qk_norm_whole && s.q_width() != s.d_model)
    return ShapeProblem{"head_dim", fmt::format("{} with {} heads is {} wide, not d_model {} ({}'s q norm is "
                                                "d_model wide: expected head_dim d_model / n_head)",
                                                s.head_size(), s.n_head, s.q_width(), s.d_model, type)};
  const bool gemma = is_gemma(s.model_type);
  const std::pair<const char*, double> gemma_keys[] = {{"query_pre_attn_scalar", s.query_pre_attn_scalar},
                                                       {"attn_logit_softcapping", s.attn_logit_softcapping},
                                                       {"final_logit_softcapping", s.final_logit_softcapping}};
  for (auto [key, value] : gemma_keys) {
    if (value < 0 || std::isnan(value))
      return ShapeProblem{key, fmt::format("{} (expected > 0, or 0 for none)", value)};
    if (value > 0 && !gemma)
      return ShapeProblem{key, fmt::format("{} has no such option (only gemma2 and gemma3_text do)", type)};
  }
  if (!s.layer_types.empty()) {
    if (!options.sliding_window)
      return ShapeProblem{"layer_types", fmt::format("{} has no sliding-window attention (expected none)", type)};
    if (int(s.layer_types.size()) != s.n_layer)
      return ShapeProblem{"layer_types", fmt::format("{} entries for n_layer {} (expected one per layer)",
                                                     s.layer_types.size(), s.n_layer)};
    const auto sliding = std::find(s.layer_types.begin(), s.layer_types.end(), LayerAttention::Sliding);
    const auto full = std::find(s.layer_types.begin(), s.layer_types.end(), LayerAttention::Full);
    if (sliding != s.layer_types.end() && s.sliding_window == 0)
      return ShapeProblem{"layer_types", fmt::format("layer {} is sliding_attention but sliding_window is 0 (none)",
                                                     sliding - s.layer_types.begin())};
    if (full != s.layer_types.end() && s.sliding_window > 0 && s.model_type == ModelType::Mistral)
      return ShapeProblem{"layer_types",
                          fmt::format("layer {} is full_attention, but mistral slides every layer (transformers' "
                                      "MistralForCausalLM ignores layer_types; expected every layer "
                                      "sliding_attention)",
                                      full - s.layer_types.begin())};
  }
  return std::nullopt;
}

std::string describe(const GptShape& s) {
  const GptShape r = s.resolved();
  auto layers = [](int n) { return fmt::format("{} layer{}", n, n == 1 ? "" : "s"); };
  std::string heads = fmt::format("{} heads", r.n_head);
  if (r.n_kv_head != r.n_head) heads += fmt::format(" ({} key/value)", r.n_kv_head);
  heads += fmt::format(" of {}", r.head_dim);
  constexpr const char* kFamily[] = {"GPT-2",     "Llama",     "Mistral", "Qwen2",   "Qwen3",  "Qwen3-MoE",
                                     "Qwen2-MoE", "Mixtral",   "Gemma 2", "Gemma 3", "OLMoE"};
  int sliding = 0;
  for (int l = 0; l < r.n_layer; ++l) sliding += r.layer_window(l) > 0;
  std::string window;
  if (sliding > 0)
    window =
        fmt::format(", sliding window {}{}", r.sliding_window, sliding < r.n_layer ? " in " + layers(sliding) : "");
  std::string experts;
  if (r.moe.enabled()) {
    int sparse = 0;
    for (int l = 0; l < r.n_layer; ++l) sparse += r.sparse(l);
    experts = fmt::format(", {} experts (top {}) of {} in {}{}", r.moe.num_experts, r.moe.top_k, r.expert_width(),
                          layers(sparse),
                          r.moe.d_shared > 0 ? fmt::format(" with a shared expert of {}", r.moe.d_shared) : "");
  }
  return fmt::format("{} {}, {}, d_model {}, d_ff {}, vocab {}, {} positions{}{}{}", kFamily[int(r.model_type)],
                     layers(r.n_layer), heads, r.d_model, r.d_ff, r.vocab_size, r.max_seq_len, experts, window,
                     r.tied_head ? "" : ", untied LM head");
}

namespace {

GptShape llama_family(ModelType type, int n_layer, int n_head, int n_kv_head, int head_dim, int d_model, int d_ff,
                      int vocab_size, int max_seq_len, double norm_eps, double rope_theta) {
  GptShape s{n_layer, n_head, d_model, vocab_size, max_seq_len};
  s.model_type = type;
  s.n_kv_head = n_kv_head;
  s.head_dim = head_dim;
  s.d_ff = d_ff;
  s.norm_eps = norm_eps;
  s.rope_theta = rope_theta;
  return s;
}

// Llama 3.2 1B (meta-llama/Llama-3.2-1B config.json): 1,235,814,400 parameters.
GptShape llama_3_2_1b() {
  GptShape s = llama_family(ModelType::Llama, 16, 32, 8, 64, 2048, 8192, 128256, 131072, 1e-5, 500000.0);
  s.rope_scaling = {RopeType::Llama3, 32.0, 1.0, 4.0, 8192};
  return s;
}

// qwen3 with experts in every layer (Qwen3MoeConfig's keys).
GptShape qwen3_moe(int n_layer, int n_head, int n_kv_head, int head_dim, int d_model, int d_ff, int vocab_size,
                   int max_seq_len, MoeShape moe) {
  GptShape s = llama_family(ModelType::Qwen3Moe, n_layer, n_head, n_kv_head, head_dim, d_model, d_ff, vocab_size,
                            max_seq_len, 1e-6, 1000000.0);
  s.tied_head = false;
  s.moe = std::move(moe);
  return s;
}

// OLMoE (OlmoeConfig): every layer num_experts experts of d_ff, not renormalised.
GptShape olmoe(int n_layer, int n_head, int d_model, int d_ff, int vocab_size, int max_seq_len, int experts,
               int top_k) {
  GptShape s = llama_family(ModelType::Olmoe, n_layer, n_head, n_head, 0, d_model, d_ff, vocab_size, max_seq_len,
                            1e-5, 10000.0);
  s.tied_head = false;
  s.moe.num_experts = experts;
  s.moe.top_k = top_k;
  s.moe.router_aux_loss_coef = 0.01;
  return s;
}

// Mixtral (MixtralConfig): every layer num_experts experts of d_ff, always renormalised.
GptShape mixtral(int n_layer, int n_head, int n_kv_head, int d_model, int d_ff, int vocab_size, int max_seq_len,
                 int experts, int top_k) {
  GptShape s = llama_family(ModelType::Mixtral, n_layer, n_head, n_kv_head, 0, d_model, d_ff, vocab_size,
                            max_seq_len, 1e-5, 1000000.0);
  s.tied_head = false;
  s.moe.num_experts = experts;
  s.moe.top_k = top_k;
  s.moe.router_aux_loss_coef = 0.02;
  return s;
}

// Gemma 3 text (Gemma3TextConfig): window 512, five sliding layers to one full, rope theta 1e6 on
// the full layers and 10000 on the sliding ones, tied head.
GptShape gemma3_text(int n_layer, int d_model, int d_ff) {
  GptShape s = llama_family(ModelType::Gemma3Text, n_layer, 4, 1, 256, d_model, d_ff, 262144, 32768, 1e-6, 1000000.0);
  s.tied_head = true;
  s.sliding_window = 512;
  s.query_pre_attn_scalar = 256;
  s.rope_local_base_freq = 10000.0;
  s.layer_types = gemma_layer_types(ModelType::Gemma3Text, n_layer);
  return s;
}

}  // namespace

const std::vector<GptPreset>& gpt_presets() {
  static const std::vector<GptPreset> presets = {
      {"toy", {2, 4, 64, 256, 128}},  // bytes of text; trains in seconds on a CPU
      {"gpt2-tiny", {4, 4, 256, 50257, 256}},
      {"gpt2-124m", {12, 12, 768, 50257, 1024}},
      {"gpt2-350m", {24, 16, 1024, 50257, 1024}},
      {"gpt2-774m", {36, 20, 1280, 50257, 1024}},
      {"gpt2-1.5b", {48, 25, 1600, 50257, 1024}},
      // Bytes of text, as toy: seconds on a CPU.
      {"llama-tiny", llama_family(ModelType::Llama, 2, 4, 2, 16, 64, 176, 256, 128, 1e-5, 10000.0)},
      {"qwen3-tiny", llama_family(ModelType::Qwen3, 2, 4, 2, 32, 64, 192, 256, 128, 1e-6, 1000000.0)},
      {"llama-3.2-1b", llama_3_2_1b()},
      // Qwen/Qwen3-0.6B: 596,049,920 parameters.
      {"qwen3-0.6b", llama_family(ModelType::Qwen3, 28, 16, 8, 128, 1024, 3072, 151936, 40960, 1e-6, 1000000.0)},
      // Qwen/Qwen2.5-0.5B: 494,032,768 parameters.
      {"qwen2.5-0.5b", llama_family(ModelType::Qwen2, 24, 14, 2, 64, 896, 4864, 151936, 32768, 1e-6, 1000000.0)},
      // As qwen3-tiny with 4 experts (top 2) in every layer: seconds on a CPU.
      {"qwen3-moe-tiny", qwen3_moe(2, 4, 2, 32, 64, 192, 256, 128, {4, 2, 96, 0, true})},
      // Qwen/Qwen3-30B-A3B: 30,532,122,624 parameters, 128 experts of 768, top 8.
      {"qwen3-30b-a3b", qwen3_moe(48, 32, 4, 128, 2048, 6144, 151936, 40960, {128, 8, 768, 0, true})},
      // allenai/OLMoE-1B-7B-0924: 6,919,161,856 parameters, 64 experts of 1024, top 8.
      {"olmoe-1b-7b", olmoe(16, 16, 2048, 1024, 50304, 4096, 64, 8)},
      // mistralai/Mixtral-8x7B-v0.1: 46,702,792,704 parameters, 8 experts of 14336, top 2.
      {"mixtral-8x7b", mixtral(32, 32, 8, 4096, 14336, 32000, 32768, 8, 2)},
      // google/gemma-3-1b-pt: 999,885,952 parameters.
      {"gemma-3-1b", gemma3_text(26, 1152, 6912)},
      // google/gemma-3-270m: 268,098,176 parameters.
      {"gemma-3-270m", gemma3_text(18, 640, 2048)},
  };
  return presets;
}

std::optional<GptShape> gpt_preset(const std::string& name) {
  for (auto& p : gpt_presets())
    if (name == p.name) return p.shape;
  return std::nullopt;
}

}  // namespace zt
