#include "config/model_block.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "config/blocks.hpp"
#include "config/config_search.hpp"
#include "config/hf_config_reader.hpp"
#include "config/json_reader.hpp"
#include "core/error.hpp"

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
}

RopeScaling read_rope_scaling(Block& model) {
  if (!model.present("rope_scaling")) {
    model.raw("rope_scaling");  // null: no scaling
    return {};
  }
  Block b = model.child("rope_scaling", UnknownKeys::Error);
  const std::string type = b.text("rope_type", "default");
  if (type != "default" && type != "llama3")
    b.fail("rope_type", fmt::format("\"{}\" is not implemented (expected default or llama3; the linear, dynamic, "
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
    if (type == "default" && present)
      b.fail(key, "is given with rope_type default (no scaling), which takes no parameters");
    if (type == "llama3" && !present)
      b.fail(key, "is missing (rope_type llama3 needs factor, low_freq_factor, high_freq_factor and "
                  "original_max_position_embeddings)");
  }
  if (type == "default") return {};
  return {RopeType::Llama3, *factor, *low, *high, int(*original)};
}

}  // namespace

GptShape shape_of(const ModelConfig& m) {
  GptShape s{m.n_layer, m.n_head, m.d_model, m.vocab_size, m.max_seq_len};
  const auto type = model_type_from_name(m.model_type);
  if (!type) fail("model.model_type: \"{}\" is not a model type zerotrain knows", m.model_type);
  s.model_type = *type;
  s.n_kv_head = m.n_kv_head;
  s.head_dim = m.head_dim;
  s.d_ff = m.d_ff;
  s.norm_eps = m.norm_eps;
  s.rope_theta = m.rope_theta;
  const RopeScalingConfig& r = m.rope_scaling;
  s.rope_scaling = {r.rope_type == "llama3" ? RopeType::Llama3 : RopeType::Default, r.factor, r.low_freq_factor,
                    r.high_freq_factor, r.original_max_position_embeddings};
  s.attention_bias = m.attention_bias;
  s.mlp_bias = m.mlp_bias;
  s.tied_head = m.tie_word_embeddings;
  s.sliding_window = m.sliding_window;
  return s;
}

ModelConfig read_model(Block& b) {
  std::vector<std::string> names;
  for (const auto& p : gpt_presets()) names.push_back(p.name);
  names.push_back("custom");
  const std::string preset = b.choice("preset", "toy", names);
  const std::string path = b.file_path("path", "");  // its config.json's keys are in the block (expand_model_path)

  GptShape shape = preset == "custom" ? GptShape{} : *gpt_preset(preset);
  const std::string type_name = b.choice("model_type", std::string(model_type_name(shape.model_type)), model_type_names());
  const ModelType type = *model_type_from_name(type_name);
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

  // Far beyond any machine, and below where the byte counts of the plan and the buffers overflow.
  constexpr double kMaxParams = 1e15;
  const double params = shape.num_params_approx();
  if (params > kMaxParams)
    b.diagnostics().fail(b.path(), fmt::format("n_layer {}, d_model {}, vocab_size {} and max_seq_len {} make {:.3g} parameters (expected at "
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
  m.n_layer = r.n_layer;
  m.n_head = r.n_head;
  m.d_model = r.d_model;
  m.vocab_size = r.vocab_size;
  m.max_seq_len = r.max_seq_len;
  m.model_type = type_name;
  m.n_kv_head = r.n_kv_head;
  m.head_dim = r.head_dim;
  m.d_ff = r.d_ff;
  m.norm_eps = r.norm_eps;
  m.rope_theta = r.rope_theta;
  m.rope_scaling.rope_type = r.rope_scaling.type == RopeType::Llama3 ? "llama3" : "default";
  m.rope_scaling.factor = r.rope_scaling.factor;
  m.rope_scaling.low_freq_factor = r.rope_scaling.low_freq_factor;
  m.rope_scaling.high_freq_factor = r.rope_scaling.high_freq_factor;
  m.rope_scaling.original_max_position_embeddings = r.rope_scaling.original_max_position_embeddings;
  m.attention_bias = r.attention_bias;
  m.mlp_bias = r.mlp_bias;
  m.tie_word_embeddings = r.tied_head;
  m.sliding_window = r.sliding_window;
  return m;
}

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
  };
  return keys;
}

std::optional<std::string> model_file(const std::string& arg) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(arg, ec)) return arg;
  if (is_hf_model_dir(arg)) return (std::filesystem::path(arg) / "config.json").string();
  if (gpt_preset(arg)) return std::nullopt;
  return find_preset_file(arg, "models");
}

nlohmann::json model_argument(const std::string& arg) {
  if (is_hf_model_dir(arg)) return {{"path", arg}};
  const std::optional<std::string> file = model_file(arg);
  if (!file && gpt_preset(arg)) return {{"preset", arg}};
  if (!file) {
    std::string presets;
    for (const auto& p : gpt_presets()) presets += (presets.empty() ? "" : ", ") + std::string(p.name);
    std::error_code ec;
    if (std::filesystem::is_directory(arg, ec))
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
  expand_model_path(copy, origins.get());
  Block b(Diagnostics{source, origins}, "model", &copy, UnknownKeys::Error);
  return read_model(b);
}

}  // namespace zt::config
