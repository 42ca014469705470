#include "config/hf_config_reader.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "config/diagnostics.hpp"
#include "config/json_reader.hpp"
#include "config/model_block.hpp"
#include "core/error.hpp"
#include "model/gpt_shape.hpp"

namespace zt::config {

namespace fs = std::filesystem;

namespace {

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
                          {"use_sliding_window", false}, {"sliding_window", 4096}};
      if (type == ModelType::Qwen3) d.update({{"head_dim", 128}, {"attention_bias", false}});
      return d;
    }
    case ModelType::Gpt2:
      return {{"vocab_size", 50257}, {"n_positions", 1024},          {"n_embd", 768},
              {"n_layer", 12},       {"n_head", 12},                 {"layer_norm_epsilon", 1e-5},
              {"tie_word_embeddings", true}};
  }
  return nlohmann::json::object();
}

// The config.json keys of each family that the architecture has at all (the others of the table,
// e.g. attention_bias in a qwen2 config, are not options of that family and are not read).
bool family_has(ModelType type, const std::string& key) {
  if (key == "attention_bias") return type == ModelType::Llama || type == ModelType::Qwen3;
  if (key == "mlp_bias") return type == ModelType::Llama;
  if (key == "sliding_window") return type != ModelType::Llama && type != ModelType::Gpt2;
  return true;
}

// rope_theta and rope_scaling as zerotrain's keys, from 5.x's rope_parameters or 4.x's top-level
// keys (rope_scaling's older spelling "type" included).
void read_rope(const nlohmann::json& hf, const std::string& file, HfModelBlock& out) {
  const bool v5 = hf.contains("rope_parameters") && !hf.at("rope_parameters").is_null();
  const std::string where = v5 ? "rope_parameters" : "rope_scaling";
  nlohmann::json scaling = v5 ? hf.at("rope_parameters") : hf.value("rope_scaling", nlohmann::json());
  if (!scaling.is_null() && !scaling.is_object())
    fail("{}: {}: {} is not an object (expected {{\"rope_type\": ..., ...}} or null)", file, where, show(scaling));
  nlohmann::json theta = hf.value("rope_theta", nlohmann::json(10000.0));
  if (v5 && scaling.contains("rope_theta")) {
    theta = scaling.at("rope_theta");
    scaling.erase("rope_theta");
  }
  out.block["rope_theta"] = theta;
  out.from["rope_theta"] = v5 ? "rope_parameters.rope_theta" : "rope_theta";
  if (scaling.is_object() && scaling.contains("type") && !scaling.contains("rope_type")) {
    scaling["rope_type"] = scaling.at("type");
    scaling.erase("type");
  }
  const nlohmann::json type = scaling.is_object() ? scaling.value("rope_type", nlohmann::json("default")) : "default";
  if (!type.is_string() || (type != "default" && type != "llama3"))
    fail("{}: {}.rope_type: {} is not implemented (expected default or llama3; the linear, dynamic, yarn and "
         "longrope scalings are refused rather than trained differently from transformers)",
         file, where, show(type));
  out.block["rope_scaling"] = type == "default" ? nlohmann::json() : scaling;
  out.from["rope_scaling"] = where;
}

// The activation the family computes: SiLU in the llama family's MLP, GELU's tanh form in GPT-2's.
void check_activation(const nlohmann::json& hf, ModelType type, const std::string& file) {
  const bool gpt2 = type == ModelType::Gpt2;
  const char* key = gpt2 ? "activation_function" : "hidden_act";
  const nlohmann::json act = hf.value(key, nlohmann::json(gpt2 ? "gelu_new" : "silu"));
  const bool ok = gpt2 ? act == "gelu_new" || act == "gelu_pytorch_tanh" : act == "silu";
  if (!ok)
    fail("{}: {}: {} is not implemented (expected {})", file, key, show(act),
         gpt2 ? "gelu_new or gelu_pytorch_tanh" : "silu");
}

}  // namespace

bool is_hf_model_dir(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) && fs::is_regular_file(fs::path(path) / "config.json", ec);
}

HfModelBlock read_hf_config(const std::string& dir) {
  HfModelBlock out;
  out.file = (fs::path(dir) / "config.json").string();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) fail("{}: no such directory (expected a Hugging Face model directory)", dir);
  if (!fs::is_regular_file(out.file, ec))
    fail("{}: holds no config.json (expected a Hugging Face model directory: config.json and safetensors)", dir);
  const nlohmann::json hf = read_json_file(out.file);
  if (!hf.is_object()) fail("{}: {} is not a JSON object", out.file, show(hf));
  const nlohmann::json type_name = hf.value("model_type", nlohmann::json());
  std::optional<ModelType> type;
  if (type_name.is_string()) type = model_type_from_name(type_name.get<std::string>());
  if (!type) {
    std::string known;
    for (const auto& n : model_type_names()) known += (known.empty() ? "" : ", ") + n;
    fail("{}: model_type: {} is not a model type zerotrain implements (expected one of {})", out.file,
         type_name.is_null() ? "missing" : show(type_name), known);
  }
  check_activation(hf, *type, out.file);

  nlohmann::json given = transformers_defaults(*type);
  for (const auto& [key, value] : hf.items())
    if (!value.is_null() || key == "sliding_window") given[key] = value;
  const bool gpt2 = *type == ModelType::Gpt2;
  out.block = {{"preset", "custom"}, {"model_type", type_name}};
  out.from["model_type"] = "model_type";
  for (const HfConfigKey& k : hf_config_keys()) {
    const std::string key = k.key;
    const char* hf_key = gpt2 ? k.gpt2_hf : k.hf;
    if (!hf_key || key == "model_type" || key == "rope_theta" || key == "rope_scaling" || !family_has(*type, key))
      continue;
    nlohmann::json value = given.value(hf_key, nlohmann::json());
    if (key == "sliding_window" && *type != ModelType::Mistral && given.value("use_sliding_window", false) != true)
      value = nullptr;  // qwen2, qwen3: the window applies only with use_sliding_window
    if (value.is_null() && key != "sliding_window") continue;  // the family derives it (n_kv_head, head_dim, d_ff)
    out.block[key] = value;
    out.from[key] = hf_key;
  }
  if (!gpt2) read_rope(hf, out.file, out);
  return out;
}

void expand_model_path(nlohmann::json& model, ValueOrigins* origins) {
  if (!model.is_object() || !model.contains("path") || !model.at("path").is_string()) return;
  const std::string dir = model.at("path").get<std::string>();
  if (dir.empty()) return;  // none, as the resolved config prints it
  const HfModelBlock hf = read_hf_config(dir);
  for (const auto& [key, value] : hf.block.items()) {
    if (model.contains(key)) continue;  // the block's own keys and --set win
    model[key] = value;
    const auto from = hf.from.find(key);
    if (origins && from != hf.from.end()) origins->set("model." + key, fmt::format("{} ({})", hf.file, from->second));
  }
}

}  // namespace zt::config
