#include "config/model_block.hpp"

#include <fmt/format.h>

#include "config/blocks.hpp"
#include "config/config_search.hpp"
#include "core/error.hpp"
#include "core/json_file.hpp"
#include "hf/hf_config.hpp"
#include "hf/hf_dir.hpp"

namespace zt::config {

namespace {

struct ShapeKey {
  const char* name;
  int GptShape::*field;
};
constexpr ShapeKey kShapeKeys[] = {{"n_layer", &GptShape::n_layer},
                                   {"n_head", &GptShape::n_head},
                                   {"d_model", &GptShape::d_model},
                                   {"vocab_size", &GptShape::vocab_size},
                                   {"max_seq_len", &GptShape::max_seq_len}};
// Sizes the family derives when they are 0.
constexpr ShapeKey kDerivedKeys[] = {{"n_kv_head", &GptShape::n_kv_head},
                                     {"head_dim", &GptShape::head_dim},
                                     {"d_ff", &GptShape::d_ff}};

const IntRange kSizeRange = IntRange::between(1, 1 << 30);

// The settings a family starts from when model_type differs from the preset's (transformers'
// defaults: RMSNorm eps 1e-6, theta 10000, no bias, untied head).
void reset_to_family_defaults(GptShape& s, ModelType type) {
  const bool gpt2 = type == ModelType::Gpt2;
  s.model_type = type;
  s.norm_eps = gpt2 ? 1e-5 : 1e-6;
  s.rope_theta = 10000.0;
  s.rope_scaling = {};
  s.attention_bias = s.mlp_bias = false;
  s.tied_head = gpt2;
  s.sliding_window = 0;
  s.layer_types.clear();
  s.moe = {};
  if (type == ModelType::Olmoe) s.moe.router_aux_loss_coef = 0.01;  // OlmoeConfig's
  s.query_pre_attn_scalar = s.attn_logit_softcapping = s.final_logit_softcapping = s.rope_local_base_freq = 0.0;
  if (is_gemma(type)) {  // Gemma2Config's and Gemma3TextConfig's
    const bool g2 = type == ModelType::Gemma2;
    s.tied_head = true;
    s.query_pre_attn_scalar = 256;
    s.attn_logit_softcapping = g2 ? 50.0 : 0.0;
    s.final_logit_softcapping = g2 ? 30.0 : 0.0;
    s.rope_theta = g2 ? 10000.0 : 1000000.0;
    s.rope_local_base_freq = g2 ? 0.0 : 10000.0;
  }
}

// A key that is a positive number, or null (or 0) for none.
void read_optional_positive(Block& b, const char* key, double& value) {
  if (b.is_null(key)) {
    b.raw(key);
    value = 0.0;
  } else if (auto v = b.optional_number(key, NumberRange::non_negative())) {
    value = *v;
  }
}

// layer_types: "sliding_attention" or "full_attention" per layer; absent or null: none given.
std::vector<LayerAttention> read_layer_types(Block& model) {
  std::vector<LayerAttention> types;
  const std::vector<std::string> names = model.texts("layer_types");
  for (size_t i = 0; i < names.size(); ++i) {
    const auto type = kLayerAttentionNames.find(names[i]);
    if (!type)
      model.fail("layer_types", fmt::format("entry {} \"{}\" is not implemented (expected sliding_attention or "
                                            "full_attention)",
                                            i, names[i]));
    types.push_back(*type);
  }
  return types;
}

// mlp_only_layers: a list of layer indices (null: none).
std::vector<int> read_layer_list(Block& model, const char* key) {
  const nlohmann::json* v = model.raw(key);
  std::vector<int> layers;
  if (!v) return layers;
  if (!v->is_array()) model.fail(key, fmt::format("{} is not a list of layer indices", show(*v)));
  for (const nlohmann::json& e : *v) {
    if (!e.is_number_integer()) model.fail(key, fmt::format("entry {} is not a layer index", show(e)));
    layers.push_back(e.get<int>());
  }
  return layers;
}

// The mixture-of-experts keys (families with experts only; the others refuse them as unknown keys).
void read_moe(Block& b, ModelType type, MoeShape& m) {
  const IntRange count = IntRange::between(0, 1 << 20);
  if (auto v = b.optional_integer("num_experts", count)) m.num_experts = int(*v);
  if (auto v = b.optional_integer("num_experts_per_tok", count)) m.top_k = int(*v);
  if (family_options(type).norm_topk_prob) m.norm_topk_prob = b.boolean("norm_topk_prob", m.norm_topk_prob);
  if (family_options(type).sparse_layers) {
    if (auto v = b.optional_integer("moe_intermediate_size", kSizeRange)) m.d_expert = int(*v);
    if (auto v = b.optional_integer("decoder_sparse_step", kSizeRange)) m.decoder_sparse_step = int(*v);
    if (b.present("mlp_only_layers") || b.is_null("mlp_only_layers"))
      m.mlp_only_layers = read_layer_list(b, "mlp_only_layers");
  }
  if (type == ModelType::Qwen2Moe)
    if (auto v = b.optional_integer("shared_expert_intermediate_size", count)) m.d_shared = int(*v);
  m.output_router_logits = b.boolean("output_router_logits", m.output_router_logits);
  if (auto v = b.optional_number("router_aux_loss_coef", NumberRange::non_negative())) m.router_aux_loss_coef = *v;
}

RopeScaling read_rope_scaling(Block& model) {
  if (!model.present("rope_scaling")) {
    model.raw("rope_scaling");  // null: no scaling
    return {};
  }
  Block b = model.child("rope_scaling", UnknownKeys::Error);
  const std::string type = b.text("rope_type", "default");
  if (type != "default" && type != "llama3" && type != "linear")
    b.fail("rope_type", fmt::format("\"{}\" is not implemented (expected default, llama3 or linear; the dynamic, "
                                    "yarn and longrope scalings are refused rather than trained differently from "
                                    "transformers)",
                                    type));
  const auto factor = b.optional_number("factor", NumberRange::positive());
  const auto low = b.optional_number("low_freq_factor", NumberRange::positive());
  const auto high = b.optional_number("high_freq_factor", NumberRange::positive());
  const auto original = b.optional_integer("original_max_position_embeddings", kSizeRange);
  b.finish();
  const std::pair<const char*, bool> given[] = {{"factor", factor.has_value()},
                                                {"low_freq_factor", low.has_value()},
                                                {"high_freq_factor", high.has_value()},
                                                {"original_max_position_embeddings", original.has_value()}};
  for (auto [key, present] : given) {
    if (type == "linear" && std::string_view(key) == "factor") {
      if (!present) b.fail(key, "is missing (rope_type linear needs factor)");
      continue;
    }
    if ((type == "default" || type == "linear") && present)
      b.fail(key, fmt::format("is given with rope_type {}, which takes no such parameter", type));
    if (type == "llama3" && !present)
      b.fail(key, "is missing (rope_type llama3 needs factor, low_freq_factor, high_freq_factor and "
                  "original_max_position_embeddings)");
  }
  if (type == "default") return {};
  if (type == "linear") return {RopeType::Linear, *factor};
  return {RopeType::Llama3, *factor, *low, *high, int(*original)};
}

}  // namespace

ModelConfig read_model(Block& b) {
  std::vector<std::string> names;
  for (const auto& p : gpt_presets()) names.push_back(p.name);
  names.push_back("custom");
  const std::string preset = b.choice("preset", "toy", names);
  const std::string path = b.file_path("path", "");  // its config.json's keys are in the block (expand_model_path)

  GptShape shape = preset == "custom" ? GptShape{} : *gpt_preset(preset);
  const ModelType type = b.choice("model_type", shape.model_type, kModelTypeNames);
  if (type != shape.model_type) reset_to_family_defaults(shape, type);
  const bool gpt2 = type == ModelType::Gpt2;

  std::string missing;
  for (const auto& k : kShapeKeys) {
    if (auto v = b.optional_integer(k.name, kSizeRange))
      shape.*k.field = int(*v);
    else if (preset == "custom")
      missing += std::string(missing.empty() ? "" : ", ") + k.name;
  }
  if (!missing.empty())
    b.fail("preset", fmt::format("\"custom\" needs n_layer, n_head, d_model, vocab_size and max_seq_len "
                                 "(missing: {})", missing));
  for (const auto& k : kDerivedKeys)
    if (auto v = b.optional_integer(k.name, kSizeRange)) shape.*k.field = int(*v);
  if (auto v = b.optional_number("norm_eps", NumberRange::positive())) shape.norm_eps = *v;
  if (auto v = b.optional_number("rope_theta", NumberRange::positive())) {
    if (gpt2) b.fail("rope_theta", "is given for model_type gpt2, which has learned positions, no rotary embeddings");
    shape.rope_theta = *v;
  }
  if (b.present("rope_scaling") || b.is_null("rope_scaling")) shape.rope_scaling = read_rope_scaling(b);
  shape.attention_bias = b.boolean("attention_bias", shape.attention_bias);
  shape.mlp_bias = b.boolean("mlp_bias", shape.mlp_bias);
  shape.tied_head = b.boolean("tie_word_embeddings", shape.tied_head);
  if (b.is_null("sliding_window")) shape.sliding_window = 0;  // null: none, as in a Hugging Face config
  if (auto v = b.optional_integer("sliding_window", IntRange::between(0, 1 << 30))) shape.sliding_window = int(*v);
  if (b.present("layer_types") || b.is_null("layer_types")) shape.layer_types = read_layer_types(b);
  // Gemma's classes derive the layers from the family's rule when layer_types is not given (null, or
  // absent beside an n_layer the preset's list does not fit), rather than sliding every layer.
  if (is_gemma(type) && !b.present("layer_types") &&
      (b.is_null("layer_types") || shape.layer_types.size() != size_t(shape.n_layer)))
    shape.layer_types =
        shape.sliding_window > 0 ? gemma_layer_types(type, shape.n_layer) : std::vector<LayerAttention>{};
  if (family_options(type).experts) read_moe(b, type, shape.moe);
  read_optional_positive(b, "query_pre_attn_scalar", shape.query_pre_attn_scalar);
  read_optional_positive(b, "attn_logit_softcapping", shape.attn_logit_softcapping);
  read_optional_positive(b, "final_logit_softcapping", shape.final_logit_softcapping);
  read_optional_positive(b, "rope_local_base_freq", shape.rope_local_base_freq);

  // Far beyond any machine, and below where the byte counts of the plan and the buffers overflow.
  constexpr double kMaxParams = 1e15;
  const double params = shape.num_params_approx();
  if (params > kMaxParams)
    b.diagnostics().fail(
        b.path(),
        fmt::format("n_layer {}, d_model {}, vocab_size {} and max_seq_len {} make {:.3g} parameters (expected at "
                    "most {:.0e})",
                    shape.n_layer, shape.d_model, shape.vocab_size, shape.max_seq_len, params, kMaxParams));
  if (shape.head_dim == 0 && shape.d_model % shape.n_head != 0)
    b.fail("n_head", fmt::format("{} does not divide {} {} (expected a divisor of d_model{})", shape.n_head,
                                 b.path_of("d_model"), shape.d_model, gpt2 ? "" : ", or an explicit head_dim"));
  if (auto problem = architecture_problem(shape)) b.fail(problem->key, problem->what);
  b.finish();

  const GptShape r = shape.resolved();
  ModelConfig m;
  m.preset = "custom";
  for (const auto& p : gpt_presets())
    if (p.shape.resolved() == r) m.preset = p.name;
  m.path = path;
  m.shape = r;
  return m;
}

std::optional<std::string> model_file(const std::string& arg) {
  switch (classify_path(arg)) {
    case PathKind::File: return arg;
    case PathKind::ModelDir: return has_hf_config(arg) ? std::optional(hf_file(arg, kHfConfigFile)) : std::nullopt;
    case PathKind::Missing: return gpt_preset(arg) ? std::nullopt : find_preset_file(arg, "models");
    default: return std::nullopt;
  }
}

nlohmann::json model_argument(const std::string& arg) {
  const PathKind kind = classify_path(arg);
  if (kind == PathKind::ModelDir && has_hf_config(arg)) return {{"path", arg}};
  const std::optional<std::string> file = model_file(arg);
  if (!file && gpt_preset(arg)) return {{"preset", arg}};
  if (!file) {
    std::string presets;
    for (const auto& p : gpt_presets()) presets += (presets.empty() ? "" : ", ") + std::string(p.name);
    if (kind != PathKind::Missing)
      fail("--model {}: the directory holds no config.json (expected a Hugging Face model directory, a model preset "
           "({}) or a model file)",
           arg, presets);
    fail("--model {}: not a model preset ({}) and no such file or directory", arg, presets);
  }
  nlohmann::json model = read_json_file(*file);
  if (!model.is_object()) fail("{}: {} is not an object (expected a model block such as {{\"preset\": \"toy\"}})",
                               *file, show(model));
  return model;
}

ModelConfig resolve_model_argument(const std::string& arg) { return read_model_block(model_argument(arg), arg); }

ModelConfig read_model_block(const nlohmann::json& block, const std::string& source) {
  nlohmann::json copy = block;
  auto origins = std::make_shared<ValueOrigins>();
  nlohmann::ordered_json hf_config = expand_model_path(copy, origins.get());
  Block b(Diagnostics{source, origins}, "model", &copy, UnknownKeys::Error);
  ModelConfig m = read_model(b);
  m.hf_config = std::move(hf_config);
  return m;
}

ModelConfig read_recorded_model(const nlohmann::json& block, const std::string& source) {
  nlohmann::json keys = block;
  std::string path;
  if (keys.is_object() && keys.contains("path")) {
    if (keys.at("path").is_string()) path = keys.at("path").get<std::string>();
    keys.erase("path");
  }
  ModelConfig m = read_model_block(keys, source);
  m.path = path;
  return m;
}

nlohmann::ordered_json expand_model_path(nlohmann::json& model, ValueOrigins* origins) {
  if (!model.is_object() || !model.contains("path") || !model.at("path").is_string()) return nullptr;
  const std::string dir = model.at("path").get<std::string>();
  if (dir.empty()) return nullptr;  // none, as the resolved config prints it
  HfConfig hf = read_hf_config(dir);
  for (const auto& [key, value] : hf.block.items()) {
    if (model.contains(key)) continue;  // the block's own keys and --set win
    model[key] = value;
    const auto from = hf.from.find(key);
    if (origins && from != hf.from.end()) origins->set("model." + key, fmt::format("{} ({})", hf.file, from->second));
  }
  return std::move(hf.json);
}

std::string resolve_initial_weights(Config& c, const ValueSources& sources) {
  std::string& init = c.training.init_from;
  const std::string& dir = c.model.path;
  if (init == kRandomInit)
    return fmt::format("weights: random values from {}", sources.described("training.init_from"));
  if (!init.empty())
    return fmt::format("weights from {} ({}): the weights only; Adam's moments, the step and the schedule start afresh",
                       init, sources.described("training.init_from"));
  if (dir.empty()) {
    init = kRandomInit;
    return "weights: random values (training.init_from random, the default without a model directory)";
  }
  init = dir;  // a directory without weights is refused when the run starts (--dry-run plans without them)
  return fmt::format("weights from {} (model.path, as from_pretrained loads them; --set training.init_from=random "
                     "for random values)",
                     dir);
}

}  // namespace zt::config
