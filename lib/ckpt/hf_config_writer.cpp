#include "ckpt/hf_config_writer.hpp"

#include <string_view>

#include "config/model_block.hpp"
#include "core/error.hpp"

namespace zt {

namespace {

using ordered_json = nlohmann::ordered_json;

struct Family {
  const char* model_type;
  const char* architecture;
};
constexpr Family kFamilies[] = {{"gpt2", "GPT2LMHeadModel"},
                                {"llama", "LlamaForCausalLM"},
                                {"mistral", "MistralForCausalLM"},
                                {"qwen2", "Qwen2ForCausalLM"},
                                {"qwen3", "Qwen3ForCausalLM"}};

// Whether the family's transformers config class has the key (model/gpt_shape.hpp refuses the
// others when they are set).
bool family_has(const std::string& type, std::string_view key) {
  if (key == "attention_bias") return type == "llama" || type == "qwen3";
  if (key == "mlp_bias") return type == "llama";
  if (key == "sliding_window") return type == "mistral" || type == "qwen2" || type == "qwen3";
  return true;
}

void set_if_absent(ordered_json& j, const char* key, const ordered_json& value) {
  if (!j.contains(key)) j[key] = value;
}

// Mistral writes its window (null: none); Qwen2 and Qwen3 switch it with use_sliding_window, from
// layer max_window_layers on (0: every layer, as zerotrain computes).
void write_sliding_window(ordered_json& out, const config::ModelConfig& m) {
  const int window = m.sliding_window;
  if (m.model_type == "mistral") {
    out["sliding_window"] = window > 0 ? ordered_json(window) : ordered_json(nullptr);
    return;
  }
  out["use_sliding_window"] = window > 0;
  if (window > 0) {
    out["sliding_window"] = window;
    out["max_window_layers"] = 0;
    return;
  }
  set_if_absent(out, "sliding_window", nullptr);  // a source's unused window stays as it was
  set_if_absent(out, "max_window_layers", m.n_layer);
}

// transformers 5: one rope_parameters object holds the theta and the scaling.
ordered_json rope_parameters(const nlohmann::json& block) {
  ordered_json p = {{"rope_type", "default"}};
  if (block.at("rope_scaling").is_object())
    for (auto& [k, v] : block.at("rope_scaling").items()) p[k] = v;
  p["rope_theta"] = block.at("rope_theta");
  return p;
}

}  // namespace

std::string hf_architecture(const std::string& model_type) {
  for (const Family& f : kFamilies)
    if (model_type == f.model_type) return f.architecture;
  fail("model_type \"{}\" has no Hugging Face architecture zerotrain writes", model_type);
}

std::string torch_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F32: return "float32";
    case DType::BF16: return "bfloat16";
    case DType::F16: return "float16";
  }
  return "float32";
}

ordered_json hf_config_json(const config::ModelConfig& m, DType dtype, const ordered_json& source) {
  const std::string& type = m.model_type;
  const bool gpt2 = type == "gpt2";
  const nlohmann::json block = config::model_json(m);
  const bool from_source = source.is_object() && source.value("model_type", std::string()) == type;

  ordered_json out = {{"architectures", {hf_architecture(type)}}, {"model_type", type}};
  if (from_source)
    for (auto& [k, v] : source.items()) out[k] = v;
  const bool in_rope_parameters = from_source && source.contains("rope_parameters");

  for (const config::HfConfigKey& key : config::hf_config_keys()) {
    const char* hf = gpt2 ? key.gpt2_hf : key.hf;
    const std::string_view name = key.key;
    if (!hf || !block.contains(key.key) || !family_has(type, name)) continue;
    if (name == "sliding_window") {
      write_sliding_window(out, m);
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
    out["n_ctx"] = m.max_seq_len;
    out["layer_norm_epsilon"] = 1e-5;
    out["activation_function"] = "gelu_new";
    out["tie_word_embeddings"] = true;
    set_if_absent(out, "bos_token_id", m.vocab_size - 1);  // GPT-2's convention: the last token is <|endoftext|>
    set_if_absent(out, "eos_token_id", m.vocab_size - 1);
  } else {
    out["hidden_act"] = "silu";
    set_if_absent(out, "initializer_range", 0.02);
    set_if_absent(out, "attention_dropout", 0.0);
    set_if_absent(out, "use_cache", true);
  }
  out["torch_dtype"] = torch_dtype_name(dtype);
  if (out.contains("dtype")) out["dtype"] = torch_dtype_name(dtype);  // transformers 5's name
  return out;
}

}  // namespace zt
