#include "hf/hf_config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/by_dtype.hpp"
#include "core/error.hpp"
#include "core/json_file.hpp"
#include "hf/hf_dir.hpp"

namespace zt {

namespace fs = std::filesystem;

namespace {

using ordered_json = nlohmann::ordered_json;

// ---- the key table and the families ----

struct Family {
  ModelType type;
  const char* architecture;
};
constexpr Family kFamilies[] = {{ModelType::Gpt2, "GPT2LMHeadModel"},
                                {ModelType::Llama, "LlamaForCausalLM"},
                                {ModelType::Mistral, "MistralForCausalLM"},
                                {ModelType::Qwen2, "Qwen2ForCausalLM"},
                                {ModelType::Qwen3, "Qwen3ForCausalLM"},
                                {ModelType::Qwen3Moe, "Qwen3MoeForCausalLM"},
                                {ModelType::Qwen2Moe, "Qwen2MoeForCausalLM"},
                                {ModelType::Mixtral, "MixtralForCausalLM"},
                                {ModelType::Gemma2, "Gemma2ForCausalLM"},
                                {ModelType::Gemma3Text, "Gemma3ForCausalLM"},
                                {ModelType::Olmoe, "OlmoeForCausalLM"}};

// The mixture-of-experts keys (model/gpt_shape.hpp's MoeShape), the same in both files: of every
// family with experts, and those of the families with sparse layers among dense ones.
bool moe_key(const std::string& key) {
  return key == "num_experts" || key == "num_experts_per_tok" || key == "output_router_logits" ||
         key == "router_aux_loss_coef";
}
bool sparse_layers_key(const std::string& key) {
  return key == "moe_intermediate_size" || key == "decoder_sparse_step" || key == "mlp_only_layers";
}

// The keys only Gemma's config classes have.
bool gemma_key(const std::string& key) {
  return key == "query_pre_attn_scalar" || key == "attn_logit_softcapping" || key == "final_logit_softcapping" ||
         key == "rope_local_base_freq";
}

// Whether the family's transformers config class has the model key at all.
bool family_has(ModelType type, const std::string& key) {
  const FamilyOptions options = family_options(type);
  if (key == "attention_bias") return options.attention_bias;
  if (key == "mlp_bias") return options.mlp_bias;
  if (key == "sliding_window" || key == "layer_types") return options.sliding_window;
  if (moe_key(key)) return options.experts;
  if (sparse_layers_key(key)) return options.sparse_layers;
  if (key == "norm_topk_prob") return options.norm_topk_prob;
  if (key == "shared_expert_intermediate_size") return type == ModelType::Qwen2Moe;
  if (key == "rope_local_base_freq") return type == ModelType::Gemma3Text;
  if (gemma_key(key)) return is_gemma(type);
  return true;
}

// ---- reading ----

// What transformers' config classes (LlamaConfig, MistralConfig, Qwen2Config, Qwen3Config,
// GPT2Config) assume for a key config.json leaves out, where zerotrain's own default differs.
// num_key_value_heads and head_dim absent mean n_head and d_model / n_head for llama, mistral's
// head_dim and qwen2's likewise; n_inner absent means 4 x n_embd.
nlohmann::json transformers_defaults(ModelType type) {
  switch (type) {
    case ModelType::Llama:
      return {{"vocab_size", 32000},         {"hidden_size", 4096},          {"intermediate_size", 11008},
              {"num_hidden_layers", 32},     {"num_attention_heads", 32},    {"max_position_embeddings", 2048},
              {"rms_norm_eps", 1e-6},        {"tie_word_embeddings", false}, {"attention_bias", false},
              {"mlp_bias", false}};
    case ModelType::Mistral:
      return {{"vocab_size", 32000},         {"hidden_size", 4096},           {"intermediate_size", 14336},
              {"num_hidden_layers", 32},     {"num_attention_heads", 32},     {"num_key_value_heads", 8},
              {"max_position_embeddings", 131072}, {"rms_norm_eps", 1e-6}, {"tie_word_embeddings", false},
              {"sliding_window", 4096}};
    case ModelType::Qwen2:
    case ModelType::Qwen3: {
      nlohmann::json d = {{"vocab_size", 151936},        {"hidden_size", 4096},        {"intermediate_size", 22016},
                          {"num_hidden_layers", 32},     {"num_attention_heads", 32},  {"num_key_value_heads", 32},
                          {"max_position_embeddings", 32768}, {"rms_norm_eps", 1e-6}, {"tie_word_embeddings", false},
                          {"use_sliding_window", false}, {"sliding_window", 4096}, {"max_window_layers", 28}};
      if (type == ModelType::Qwen3) d.update({{"head_dim", 128}, {"attention_bias", false}});
      return d;
    }
    case ModelType::Qwen3Moe:  // Qwen3MoeConfig; head_dim absent: hidden_size / num_attention_heads
      return {{"vocab_size", 151936},         {"hidden_size", 2048},           {"intermediate_size", 6144},
              {"num_hidden_layers", 24},      {"num_attention_heads", 32},     {"num_key_value_heads", 4},
              {"max_position_embeddings", 32768}, {"rms_norm_eps", 1e-6},     {"tie_word_embeddings", false},
              {"attention_bias", false},      {"decoder_sparse_step", 1},      {"moe_intermediate_size", 768},
              {"num_experts_per_tok", 8},     {"num_experts", 128},            {"norm_topk_prob", false},
              {"output_router_logits", false}, {"router_aux_loss_coef", 0.001},
              {"mlp_only_layers", nlohmann::json::array()}};
    case ModelType::Qwen2Moe:  // Qwen2MoeConfig
      return {{"vocab_size", 151936},         {"hidden_size", 2048},           {"intermediate_size", 5632},
              {"num_hidden_layers", 24},      {"num_attention_heads", 16},     {"num_key_value_heads", 16},
              {"max_position_embeddings", 32768}, {"rms_norm_eps", 1e-6},     {"tie_word_embeddings", false},
              {"decoder_sparse_step", 1},     {"moe_intermediate_size", 1408},
              {"shared_expert_intermediate_size", 5632},
              {"num_experts_per_tok", 4},     {"num_experts", 60},             {"norm_topk_prob", false},
              {"output_router_logits", false}, {"router_aux_loss_coef", 0.001},
              {"mlp_only_layers", nlohmann::json::array()}};
    case ModelType::Mixtral:  // MixtralConfig (num_experts is num_local_experts there)
      return {{"vocab_size", 32000},          {"hidden_size", 4096},           {"intermediate_size", 14336},
              {"num_hidden_layers", 32},      {"num_attention_heads", 32},     {"num_key_value_heads", 8},
              {"max_position_embeddings", 131072}, {"rms_norm_eps", 1e-5},    {"tie_word_embeddings", false},
              {"num_experts_per_tok", 2},     {"num_experts", 8},              {"output_router_logits", false},
              {"router_aux_loss_coef", 0.001}};
    case ModelType::Olmoe:  // OlmoeConfig (num_key_value_heads absent: num_attention_heads)
      return {{"vocab_size", 50304},          {"hidden_size", 2048},           {"intermediate_size", 2048},
              {"num_hidden_layers", 16},      {"num_attention_heads", 16},     {"max_position_embeddings", 4096},
              {"rms_norm_eps", 1e-5},         {"tie_word_embeddings", false},  {"attention_bias", false},
              {"num_experts_per_tok", 8},     {"num_experts", 64},             {"norm_topk_prob", false},
              {"output_router_logits", false}, {"router_aux_loss_coef", 0.01}};
    case ModelType::Gemma2:
    case ModelType::Gemma3Text: {
      const bool g2 = type == ModelType::Gemma2;
      return {{"vocab_size", g2 ? 256000 : 262208},
              {"hidden_size", 2304},
              {"intermediate_size", 9216},
              {"num_hidden_layers", 26},
              {"num_attention_heads", 8},
              {"num_key_value_heads", 4},
              {"head_dim", 256},
              {"max_position_embeddings", g2 ? 8192 : 131072},
              {"rms_norm_eps", 1e-6},
              {"tie_word_embeddings", true},
              {"attention_bias", false},
              {"sliding_window", 4096},
              {"query_pre_attn_scalar", 256},
              {"final_logit_softcapping", g2 ? nlohmann::json(30.0) : nlohmann::json()},
              {"attn_logit_softcapping", g2 ? nlohmann::json(50.0) : nlohmann::json()},
              {"rope_theta", g2 ? 10000.0 : 1000000.0}};
    }
    case ModelType::Gpt2:
      return {{"vocab_size", 50257}, {"n_positions", 1024},          {"n_embd", 768},
              {"n_layer", 12},       {"n_head", 12},                 {"layer_norm_epsilon", 1e-5},
              {"tie_word_embeddings", true}};
  }
  return nlohmann::json::object();
}

// rope_theta and rope_scaling as zerotrain's keys, from 5.x's rope_parameters or 4.x's top-level
// keys (rope_scaling's older spelling "type" included).
// gemma3_text: 5.x's rope_parameters holds one such object per layer kind: full_attention's is
// rope_theta and rope_scaling, sliding_attention's rope_theta is rope_local_base_freq (its scaling
// must be none); 4.x has rope_local_base_freq at the top.
void read_rope(const nlohmann::json& given, HfConfig& out, ModelType type) {
  nlohmann::json hf = given;
  const bool v5 = hf.contains("rope_parameters") && !hf.at("rope_parameters").is_null();
  std::string where = v5 ? "rope_parameters" : "rope_scaling";
  if (type == ModelType::Gemma3Text) {
    out.block["rope_local_base_freq"] = hf.value("rope_local_base_freq", nlohmann::json(10000.0));
    out.from["rope_local_base_freq"] = "rope_local_base_freq";
    if (v5 && hf.at("rope_parameters").is_object() && hf.at("rope_parameters").contains("full_attention")) {
      const nlohmann::json both = hf.at("rope_parameters");
      const nlohmann::json local = both.value("sliding_attention", nlohmann::json::object());
      if (!local.is_object() || local.value("rope_type", std::string("default")) != "default")
        fail("{}: rope_parameters.sliding_attention: {} is not implemented (expected rope_type default: the sliding "
             "layers' rotations unscaled)",
             out.file, show(local));
      if (local.contains("rope_theta")) {
        out.block["rope_local_base_freq"] = local.at("rope_theta");
        out.from["rope_local_base_freq"] = "rope_parameters.sliding_attention.rope_theta";
      }
      hf["rope_parameters"] = both.at("full_attention");
      where = "rope_parameters.full_attention";
    }
  }
  nlohmann::json scaling = v5 ? hf.at("rope_parameters") : hf.value("rope_scaling", nlohmann::json());
  if (!scaling.is_null() && !scaling.is_object())
    fail("{}: {}: {} is not an object (expected {{\"rope_type\": ..., ...}} or null)", out.file, where, show(scaling));
  nlohmann::json theta = hf.value("rope_theta", nlohmann::json(10000.0));
  if (v5 && scaling.contains("rope_theta")) {
    theta = scaling.at("rope_theta");
    scaling.erase("rope_theta");
  }
  out.block["rope_theta"] = theta;
  out.from["rope_theta"] = v5 ? where + ".rope_theta" : "rope_theta";
  if (scaling.is_object() && scaling.contains("type") && !scaling.contains("rope_type")) {
    scaling["rope_type"] = scaling.at("type");
    scaling.erase("type");
  }
  const nlohmann::json rope_type =
      scaling.is_object() ? scaling.value("rope_type", nlohmann::json("default")) : "default";
  if (!rope_type.is_string() || (rope_type != "default" && rope_type != "llama3" && rope_type != "linear"))
    fail("{}: {}.rope_type: {} is not implemented (expected default, llama3 or linear; the dynamic, yarn and "
         "longrope scalings are refused rather than trained differently from transformers)",
         out.file, where, show(rope_type));
  out.block["rope_scaling"] = rope_type == "default" ? nlohmann::json() : scaling;
  out.from["rope_scaling"] = where;
}

// Which layers slide, as transformers' config classes decide: layer_types when config.json has it;
// else qwen2 and qwen3 (with use_sliding_window and a sliding_window; else no layer slides) layer i slides iff
// i >= max_window_layers; mistral every layer (MistralConfig ignores layer_types: a list that says
// otherwise is refused by the model block rather than trained as either).
void read_layer_types(const nlohmann::json& given, ModelType type, HfConfig& out) {
  const nlohmann::json listed = given.value("layer_types", nlohmann::json());
  if (!listed.is_null()) {
    out.block["layer_types"] = listed;
    out.from["layer_types"] = "layer_types";
    return;
  }
  out.block["layer_types"] = nullptr;
  if (is_gemma(type)) {  // Gemma2Config: even layers slide; Gemma3TextConfig: all but every pattern-th
    const nlohmann::json layers = given.value("num_hidden_layers", nlohmann::json());
    const nlohmann::json pattern = given.value("sliding_window_pattern", nlohmann::json(6));
    if (!layers.is_number_integer() || !pattern.is_number_integer() || pattern.get<int64_t>() <= 0) return;
    const int64_t every = type == ModelType::Gemma2 ? 2 : pattern.get<int64_t>();
    nlohmann::json types = nlohmann::json::array();
    for (int64_t i = 0; i < layers.get<int64_t>(); ++i)
      types.push_back((i + 1) % every != 0 ? "sliding_attention" : "full_attention");
    out.block["layer_types"] = types;
    out.from["layer_types"] = type == ModelType::Gemma2 ? "num_hidden_layers" : "sliding_window_pattern";
    return;
  }
  const bool window = given.value("use_sliding_window", false) == true && !given.at("sliding_window").is_null();
  if (type == ModelType::Mistral || !window) return;
  const nlohmann::json first = given.at("max_window_layers");
  const nlohmann::json layers = given.value("num_hidden_layers", nlohmann::json());
  if (!first.is_number_integer() || !layers.is_number_integer()) return;  // the model block names the bad key
  nlohmann::json types = nlohmann::json::array();
  for (int64_t i = 0; i < layers.get<int64_t>(); ++i)
    types.push_back(i >= first.get<int64_t>() ? "sliding_attention" : "full_attention");
  out.block["layer_types"] = types;
  out.from["layer_types"] = "max_window_layers";
}

// The activation the family computes: SiLU in the llama family's MLP, GELU's tanh form in GPT-2's.
void check_activation(const nlohmann::json& hf, ModelType type, const std::string& file) {
  if (is_gemma(type)) {  // Gemma's MLP reads hidden_activation (hidden_act is an older, unused key)
    const nlohmann::json act = hf.value("hidden_activation", nlohmann::json("gelu_pytorch_tanh"));
    if (act != "gelu_pytorch_tanh" && !act.is_null())
      fail("{}: hidden_activation: {} is not implemented (expected gelu_pytorch_tanh)", file, show(act));
    return;
  }
  const bool gpt2 = type == ModelType::Gpt2;
  const char* key = gpt2 ? "activation_function" : "hidden_act";
  const nlohmann::json act = hf.value(key, nlohmann::json(gpt2 ? "gelu_new" : "silu"));
  const bool ok = gpt2 ? act == "gelu_new" || act == "gelu_pytorch_tanh" : act == "silu";
  if (!ok)
    fail("{}: {}: {} is not implemented (expected {})", file, key, show(act),
         gpt2 ? "gelu_new or gelu_pytorch_tanh" : "silu");
}

// What the families with experts may set that zerotrain does not implement.
void check_moe_options(const nlohmann::json& given, ModelType type, const std::string& file) {
  auto refuse = [&](const char* key, const char* why) {
    fail("{}: {}: {} is not implemented ({})", file, key, show(given.at(key)), why);
  };
  if (type == ModelType::Qwen2Moe) {
    if (given.value("qkv_bias", true) != true) refuse("qkv_bias", "expected true: q, k and v with biases");
    if (given.value("use_sliding_window", false) != false)
      refuse("use_sliding_window", "expected false: qwen2_moe trains without a window");
  }
  if (type == ModelType::Olmoe && given.contains("clip_qkv"))  // null (absent here): no clipping
    refuse("clip_qkv", "expected null: q, k and v are not clipped");
  if (type == ModelType::Mixtral) {
    if (!given.value("sliding_window", nlohmann::json()).is_null())
      refuse("sliding_window", "expected null: mixtral trains without a window");
    const nlohmann::json jitter = given.value("router_jitter_noise", nlohmann::json(0.0));
    if (!jitter.is_number() || jitter.get<double>() != 0.0)
      refuse("router_jitter_noise", "expected 0: the router's input is not jittered");
  }
}

// Keys of later Gemma configs (Gemma 3n, Gemma 4) that change what the model computes: refused by
// name rather than trained as a model without them.
void refuse_unknown_gemma_keys(const nlohmann::json& given, const std::string& file) {
  constexpr std::pair<const char*, const char*> kRefused[] = {
      {"use_bidirectional_attention", "bidirectional attention (zerotrain trains causal language models)"},
      {"hidden_size_per_layer_input", "per-layer inputs"},
      {"vocab_size_per_layer_input", "per-layer inputs"},
      {"num_kv_shared_layers", "key/value sharing between layers"},
      {"altup_num_inputs", "AltUp"},
      {"laurel_rank", "LAuReL blocks"},
      {"activation_sparsity_pattern", "activation sparsity"},
      {"attention_k_eq_v", "keys equal to values"},
      {"enable_moe_block", "mixture-of-experts blocks"},
  };
  for (auto [key, what] : kRefused) {
    if (!given.contains(key)) continue;
    const nlohmann::json& v = given.at(key);
    const bool off = v.is_null() || v == false || v == 0 ||
                     (v.is_array() && std::all_of(v.begin(), v.end(), [](const auto& x) { return x == 0; }));
    if (!off) fail("{}: {}: {} is not implemented ({})", file, key, show(v), what);
  }
}

ModelType model_type_of(const nlohmann::json& hf, const std::string& file) {
  const nlohmann::json type_name = hf.value("model_type", nlohmann::json());
  std::optional<ModelType> type;
  if (type_name.is_string()) type = kModelTypeNames.find(type_name.get<std::string>());
  if (type) return *type;
  if (type_name == "gemma3")
    fail("{}: model_type: \"gemma3\" is Gemma3ForConditionalGeneration, a vision tower beside the language model, "
         "which zerotrain does not train (expected gemma3_text: a text-only Gemma 3 checkpoint such as gemma-3-1b or "
         "gemma-3-270m)",
         file);
  fail("{}: model_type: {} is not a model type zerotrain implements (expected one of {})", file,
       type_name.is_null() ? "missing" : show(type_name), kModelTypeNames.list(","));
}

// ---- writing ----

void set_if_absent(ordered_json& j, const char* key, const ordered_json& value) {
  if (!j.contains(key)) j[key] = value;
}

// Mistral writes its window (null: none), every layer sliding; Qwen2 and Qwen3 switch it with
// use_sliding_window, max_window_layers the full layers before the first sliding one, and with a
// window (or a source that has it) layer_types, as transformers 5 writes it.
void write_sliding_window(ordered_json& out, const GptShape& s) {
  const int window = s.sliding_window;
  if (s.model_type == ModelType::Mistral) {
    out["sliding_window"] = window > 0 ? ordered_json(window) : ordered_json(nullptr);
    return;
  }
  ordered_json types = ordered_json::array();
  int full_first = 0;
  for (int l = 0; l < s.n_layer; ++l) {
    const bool slides = s.layer_window(l) > 0;
    types.push_back(kLayerAttentionNames.name(slides ? LayerAttention::Sliding : LayerAttention::Full));
    if (!slides && full_first == l) full_first = l + 1;
  }
  if (is_gemma(s.model_type)) {  // the window and every layer's kind, as transformers 5 writes them
    out["sliding_window"] = window > 0 ? ordered_json(window) : ordered_json(nullptr);
    out["layer_types"] = types;
    return;
  }
  out["use_sliding_window"] = window > 0;
  if (window > 0) {
    out["sliding_window"] = window;
    out["max_window_layers"] = full_first;
  } else {
    set_if_absent(out, "sliding_window", nullptr);  // a source's unused window stays as it was
    set_if_absent(out, "max_window_layers", s.n_layer);
  }
  if (window > 0 || out.contains("layer_types")) out["layer_types"] = types;  // transformers 4.x derives it
}

// transformers 5: one rope_parameters object holds the theta and the scaling.
// gemma3_text: one per layer kind, the sliding layers' unscaled.
ordered_json rope_parameters(const nlohmann::json& block) {
  ordered_json p = {{"rope_type", "default"}};
  if (block.at("rope_scaling").is_object())
    for (auto& [k, v] : block.at("rope_scaling").items()) p[k] = v;
  p["rope_theta"] = block.at("rope_theta");
  if (!block.contains("rope_local_base_freq")) return p;
  return {{"full_attention", p},
          {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", block.at("rope_local_base_freq")}}}};
}

}  // namespace

const std::vector<HfConfigKey>& hf_config_keys() {
  static const std::vector<HfConfigKey> keys = {
      {"model_type", "model_type", "model_type"},
      {"n_layer", "num_hidden_layers", "n_layer"},
      {"n_head", "num_attention_heads", "n_head"},
      {"n_kv_head", "num_key_value_heads", nullptr},
      {"head_dim", "head_dim", nullptr},
      {"d_model", "hidden_size", "n_embd"},
      {"d_ff", "intermediate_size", "n_inner"},
      {"vocab_size", "vocab_size", "vocab_size"},
      {"max_seq_len", "max_position_embeddings", "n_positions"},
      {"norm_eps", "rms_norm_eps", "layer_norm_epsilon"},
      {"rope_theta", "rope_theta", nullptr},
      {"rope_scaling", "rope_scaling", nullptr},
      {"attention_bias", "attention_bias", nullptr},
      {"mlp_bias", "mlp_bias", nullptr},
      {"tie_word_embeddings", "tie_word_embeddings", "tie_word_embeddings"},
      {"sliding_window", "sliding_window", nullptr},
      {"layer_types", "layer_types", nullptr},
      {"num_experts", "num_experts", nullptr},  // mixtral: num_local_experts
      {"num_experts_per_tok", "num_experts_per_tok", nullptr},
      {"moe_intermediate_size", "moe_intermediate_size", nullptr},
      {"shared_expert_intermediate_size", "shared_expert_intermediate_size", nullptr},
      {"norm_topk_prob", "norm_topk_prob", nullptr},
      {"decoder_sparse_step", "decoder_sparse_step", nullptr},
      {"mlp_only_layers", "mlp_only_layers", nullptr},
      {"output_router_logits", "output_router_logits", nullptr},
      {"router_aux_loss_coef", "router_aux_loss_coef", nullptr},
      {"query_pre_attn_scalar", "query_pre_attn_scalar", nullptr},
      {"attn_logit_softcapping", "attn_logit_softcapping", nullptr},
      {"final_logit_softcapping", "final_logit_softcapping", nullptr},
      {"rope_local_base_freq", "rope_local_base_freq", nullptr},
  };
  return keys;
}

nlohmann::json model_keys(const GptShape& shape) {
  const GptShape s = shape.resolved();
  nlohmann::json j = {{"model_type", kModelTypeNames.name(s.model_type)},
                      {"n_layer", s.n_layer},
                      {"n_head", s.n_head},
                      {"d_model", s.d_model},
                      {"vocab_size", s.vocab_size},
                      {"max_seq_len", s.max_seq_len}};
  if (s.model_type == ModelType::Gpt2) return j;  // GPT-2's fixed architecture needs only its sizes
  const RopeScaling& r = s.rope_scaling;
  nlohmann::json rope_scaling = nullptr;
  if (r.type == RopeType::Llama3)
    rope_scaling = {{"rope_type", "llama3"},
                    {"factor", r.factor},
                    {"low_freq_factor", r.low_freq_factor},
                    {"high_freq_factor", r.high_freq_factor},
                    {"original_max_position_embeddings", r.original_max_position_embeddings}};
  j.update({{"n_kv_head", s.n_kv_head},
            {"head_dim", s.head_dim},
            {"d_ff", s.d_ff},
            {"norm_eps", s.norm_eps},
            {"rope_theta", s.rope_theta},
            {"rope_scaling", rope_scaling},
            {"attention_bias", s.attention_bias},
            {"mlp_bias", s.mlp_bias},
            {"tie_word_embeddings", s.tied_head},
            {"sliding_window", s.sliding_window},
            {"layer_types", nullptr}});
  // Gemma's every layer, sliding or not: its null stands for the family's rule, not for every layer.
  if (!s.layer_types.empty() || (is_gemma(s.model_type) && s.sliding_window > 0)) {
    nlohmann::json& types = j["layer_types"] = nlohmann::json::array();
    for (int l = 0; l < s.n_layer; ++l)
      types.push_back(
          kLayerAttentionNames.name(s.layer_window(l) > 0 ? LayerAttention::Sliding : LayerAttention::Full));
  }
  const FamilyOptions options = family_options(s.model_type);
  if (options.experts) {
    const MoeShape& m = s.moe;
    j.update({{"num_experts", m.num_experts},
              {"num_experts_per_tok", m.top_k},
              {"output_router_logits", m.output_router_logits},
              {"router_aux_loss_coef", m.router_aux_loss_coef}});
    if (options.norm_topk_prob) j["norm_topk_prob"] = m.norm_topk_prob;
    if (options.sparse_layers)
      j.update({{"moe_intermediate_size", m.d_expert},
                {"decoder_sparse_step", m.decoder_sparse_step},
                {"mlp_only_layers", m.mlp_only_layers}});
    if (s.model_type == ModelType::Qwen2Moe) j["shared_expert_intermediate_size"] = m.d_shared;
  }
  if (r.type == RopeType::Linear) j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", r.factor}};
  if (is_gemma(s.model_type)) {
    auto none_if_0 = [](double v) { return v > 0 ? nlohmann::json(v) : nlohmann::json(); };
    const double scalar = s.query_pre_attn_scalar;  // an int in transformers' config classes
    j["query_pre_attn_scalar"] =
        scalar > 0 && scalar == std::floor(scalar) ? nlohmann::json(int64_t(scalar)) : none_if_0(scalar);
    j["attn_logit_softcapping"] = none_if_0(s.attn_logit_softcapping);
    j["final_logit_softcapping"] = none_if_0(s.final_logit_softcapping);
    if (s.model_type == ModelType::Gemma3Text) j["rope_local_base_freq"] = none_if_0(s.rope_local_base_freq);
  }
  return j;
}

HfConfig read_hf_config(const std::string& dir) {
  HfConfig out;
  out.file = hf_file(dir, kHfConfigFile);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) fail("{}: no such directory (expected a Hugging Face model directory)", dir);
  if (!fs::is_regular_file(out.file, ec))
    fail("{}: holds no config.json (expected a Hugging Face model directory: config.json and safetensors)", dir);
  out.json = read_hf_config_json(dir);
  const nlohmann::json hf = out.json;
  if (!hf.is_object()) fail("{}: {} is not a JSON object", out.file, show(hf));
  const ModelType type = model_type_of(hf, out.file);
  check_activation(hf, type, out.file);

  nlohmann::json given = transformers_defaults(type);
  for (const auto& [key, value] : hf.items())
    if (!value.is_null() || key == "sliding_window") given[key] = value;
  // transformers 5 writes num_experts under the name its attribute map gives it (mixtral's own name)
  const bool local_experts = hf.contains("num_local_experts") && !hf.contains("num_experts");
  if (local_experts) given["num_experts"] = hf.at("num_local_experts");
  check_moe_options(given, type, out.file);
  const bool gpt2 = type == ModelType::Gpt2;
  out.block = {{"preset", "custom"}, {"model_type", hf.at("model_type")}};
  out.from["model_type"] = "model_type";
  for (const HfConfigKey& k : hf_config_keys()) {
    const std::string key = k.key;
    const char* hf_key = gpt2 ? k.gpt2_hf : k.hf;
    if (!hf_key || key == "model_type" || key == "rope_theta" || key == "rope_scaling" || key == "layer_types" ||
        key == "rope_local_base_freq" || !family_has(type, key))
      continue;
    nlohmann::json value = given.value(hf_key, nlohmann::json());
    if (key == "sliding_window" && type != ModelType::Mistral && !is_gemma(type) &&
        given.value("use_sliding_window", false) != true)
      value = nullptr;  // qwen2, qwen3: the window applies only with use_sliding_window
    if (value.is_null() && key != "sliding_window" && !gemma_key(key))
      continue;  // the family derives it (n_kv_head, head_dim, d_ff)
    out.block[key] = value;
    out.from[key] = key == "num_experts" && local_experts ? "num_local_experts" : hf_key;
  }
  if (is_gemma(type)) refuse_unknown_gemma_keys(given, out.file);
  if (!gpt2) read_rope(is_gemma(type) ? given : hf, out, type);
  if (family_has(type, "layer_types")) read_layer_types(given, type, out);
  return out;
}

nlohmann::ordered_json read_hf_config_json(const std::string& dir) {
  const std::string file = hf_file(dir, kHfConfigFile);
  const std::string text = read_text_file(file);
  parse_json(text, file);  // the same errors as everywhere else: duplicate keys, bad JSON
  return ordered_json::parse(text, nullptr, true, /*ignore_comments=*/true);
}

ModelType hf_model_type(const std::string& dir) {
  const std::string file = hf_file(dir, kHfConfigFile);
  const nlohmann::json hf = read_json_file(file);
  if (!hf.is_object()) fail("{}: {} is not a JSON object", file, show(hf));
  return model_type_of(hf, file);
}

std::string hf_architecture(ModelType type) {
  for (const Family& f : kFamilies)
    if (type == f.type) return f.architecture;
  fail("model_type \"{}\" has no Hugging Face architecture zerotrain writes", kModelTypeNames.name(type));
}

std::string torch_dtype_name(DType dtype) {
  return by_dtype<std::string>(dtype, "float32", "bfloat16", "float16", "float32");
}

ordered_json hf_config_json(const GptShape& shape, DType dtype, const ordered_json& source) {
  const GptShape s = shape.resolved();
  const ModelType type = s.model_type;
  const std::string type_name(kModelTypeNames.name(type));
  const bool gpt2 = type == ModelType::Gpt2;
  const nlohmann::json block = model_keys(s);
  const bool from_source = source.is_object() && source.value("model_type", std::string()) == type_name;

  ordered_json out = {{"architectures", {hf_architecture(type)}}, {"model_type", type_name}};
  if (from_source)
    for (auto& [k, v] : source.items()) out[k] = v;
  const bool in_rope_parameters = from_source && source.contains("rope_parameters");

  for (const HfConfigKey& key : hf_config_keys()) {
    const char* hf = gpt2 ? key.gpt2_hf : key.hf;
    const std::string name = key.key;
    if (!hf || !block.contains(key.key) || !family_has(type, name)) continue;
    if (name == "layer_types") continue;  // with sliding_window
    if (name == "sliding_window") {
      write_sliding_window(out, s);
    } else if (name == "rope_local_base_freq" && in_rope_parameters) {
      out.erase(hf);  // inside rope_parameters
    } else if (name == "rope_theta" || name == "rope_scaling") {
      if (in_rope_parameters)
        out["rope_parameters"] = rope_parameters(block);
      else
        out[hf] = block.at(key.key);
    } else {
      out[hf] = block.at(key.key);
    }
  }

  if (gpt2) {  // the architecture GPT-2 always has (model/gpt_shape.hpp)
    out["n_ctx"] = s.max_seq_len;
    out["layer_norm_epsilon"] = 1e-5;
    out["activation_function"] = "gelu_new";
    out["tie_word_embeddings"] = true;
    set_if_absent(out, "bos_token_id", s.vocab_size - 1);  // GPT-2's convention: the last token is <|endoftext|>
    set_if_absent(out, "eos_token_id", s.vocab_size - 1);
  } else if (is_gemma(type)) {
    out["hidden_activation"] = "gelu_pytorch_tanh";
    set_if_absent(out, "initializer_range", 0.02);
    set_if_absent(out, "attention_dropout", 0.0);
    set_if_absent(out, "use_cache", true);
  } else {
    out["hidden_act"] = "silu";
    set_if_absent(out, "initializer_range", 0.02);
    set_if_absent(out, "attention_dropout", 0.0);
    set_if_absent(out, "use_cache", true);
  }
  if (type == ModelType::Mixtral) {  // its own name for it, in transformers 4 and 5
    out.erase("num_experts");
    out["num_local_experts"] = s.moe.num_experts;
  } else if (out.contains("num_local_experts")) {  // transformers 5's name, where the source has it
    out.erase("num_experts");
    out["num_local_experts"] = s.moe.num_experts;
  }
  if (type == ModelType::Qwen2Moe) set_if_absent(out, "qkv_bias", true);
  out["torch_dtype"] = torch_dtype_name(dtype);
  if (out.contains("dtype")) out["dtype"] = torch_dtype_name(dtype);  // transformers 5's name
  return out;
}

}  // namespace zt
