// PEFT adapter directories (hf/peft_adapter.hpp): PEFT's names of the adapter tensors, the
// adapter_config.json written, the weights written and read back through HfWeights, and what a
// directory given as lora.init_from must agree on with the lora block (an error naming the key).
// tests/train/test_lora_peft.cpp checks the same files against PEFT itself.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <set>

#include "../data/temp_dir.hpp"
#include "core/json_file.hpp"
#include "hf/hf_weights.hpp"
#include "hf/peft_adapter.hpp"

using namespace zt;
using nlohmann::json;

namespace {

GptShape llama() {
  GptShape s(2, 4, 32, 100, 16);
  s.model_type = ModelType::Llama;
  s.n_kv_head = 2;
  return s.resolved();
}

LoraSpec spec(std::vector<std::string> targets) { return LoraSpec{4, 16.0, 0.0, false, std::move(targets)}; }

// An adapter_config.json as PEFT writes it, with `changes` applied.
std::string write_config(const TempDir& dir, const GptShape& shape, const LoraSpec& s, const json& changes) {
  json j = json::parse(peft_config_json(shape, s, "").dump());
  if (changes.is_object()) j.merge_patch(changes);  // ({} is null, which would replace everything)
  return dir.write("adapter_config.json", j.dump());
}

}  // namespace

TEST_CASE("PEFT's names: base_model.model. and the model class's module path", "[hf][peft]") {
  CHECK(peft_tensor_name(llama(), "model.layers.1.self_attn.q_proj.lora_A.weight") ==
        "base_model.model.model.layers.1.self_attn.q_proj.lora_A.weight");
  CHECK(peft_tensor_name(GptShape(1, 2, 16, 40, 8), "h.0.attn.c_attn.lora_B.weight") ==
        "base_model.model.transformer.h.0.attn.c_attn.lora_B.weight");
  const LoraSpec s = spec({"v_proj", "down_proj"});
  const ParamLayout layout = make_training_layout(llama(), {s, {}});
  const std::vector<HfTensor> tensors = peft_tensors(llama(), layout);
  REQUIRE(tensors.size() == 2 * 2 * 2);  // two sites, A and B, two layers
  CHECK(tensors[0].name == "base_model.model.model.layers.0.self_attn.v_proj.lora_A.weight");
  CHECK(tensors[0].offset == layout.find("model.layers.0.self_attn.v_proj.lora_A.weight")->offset);
  const json config = json::parse(peft_config_json(llama(), s, "base").dump());
  CHECK(config["peft_type"] == "LORA");
  CHECK(config["task_type"] == "CAUSAL_LM");
  CHECK(config["r"] == 4);
  CHECK(config["lora_alpha"] == 16);
  CHECK(config["lora_alpha"].is_number_integer());
  CHECK(config["target_modules"] == json({"down_proj", "v_proj"}));
  CHECK(config["base_model_name_or_path"] == "base");
  CHECK(config["fan_in_fan_out"] == false);
  CHECK(peft_config_json(GptShape(1, 2, 16, 40, 8), spec({"c_attn"}), "")["fan_in_fan_out"] == true);
}

TEST_CASE("an adapter directory written is read back bit for bit", "[hf][peft]") {
  TempDir dir;
  const GptShape shape = llama();
  const LoraSpec s = spec({"all-linear"});
  const ParamLayout layout = make_training_layout(shape, {s, {}});
  std::vector<float> values(layout.total);
  for (size_t i = 0; i < values.size(); ++i) values[i] = float(i % 97) * 0.01f - 0.3f;
  const std::string out = dir.file("adapter");
  PeftAdapterWriter writer(out, layout, shape, s, HfOutput(DType::F32));
  for (const ParamGroup& g : layout.groups) writer.write_group(g, values.data() + g.offset);
  writer.commit();
  const std::string weights = check_peft_adapter(out, shape, s);
  const HfWeights read(weights, peft_tensors(shape, layout));
  const size_t base = make_gpt_layout(shape).total;
  std::vector<float> back(layout.total - base);
  read.read(back.data(), base, back.size());
  CHECK(std::equal(back.begin(), back.end(), values.begin() + std::ptrdiff_t(base)));
}

TEST_CASE("lora.init_from's adapter_config.json must be the lora block's", "[hf][peft][errors]") {
  TempDir dir;
  const GptShape shape = llama();
  const LoraSpec s = spec({"q_proj", "v_proj"});
  auto error = [&](const json& changes) {
    write_config(dir, shape, s, changes);
    try {
      check_peft_adapter(dir.path.string(), shape, s);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  CHECK(error({}) == "(accepted)");
  // PEFT writes all-linear out as every module's full name; suffixes of the run's modules are fine.
  CHECK(error({{"target_modules", {"model.layers.0.self_attn.q_proj", "model.layers.1.self_attn.q_proj", "v_proj"}}}) ==
        "(accepted)");
  CHECK_THAT(error({{"r", 8}}), Catch::Contains("adapter_config.json: r is 8: this run's lora.r is 4"));
  CHECK_THAT(error({{"lora_alpha", 32}}), Catch::Contains("lora_alpha is 32: this run's lora.alpha is 16"));
  CHECK_THAT(error({{"target_modules", {"q_proj"}}}),
             Catch::Contains("target_modules") && Catch::Contains("leaves out model.layers.0.self_attn.v_proj"));
  CHECK_THAT(error({{"target_modules", {"q_proj", "v_proj", "model.layers.1.mlp.up_proj"}}}),
             Catch::Contains("adapts model.layers.1.mlp.up_proj"));
  CHECK_THAT(error({{"use_dora", true}}), Catch::Contains("use_dora is true: DoRA is not implemented"));
  CHECK_THAT(error({{"peft_type", "IA3"}}), Catch::Contains("peft_type is \"IA3\""));
  CHECK_THAT(error({{"rank_pattern", {{"q_proj", 8}}}}), Catch::Contains("rank_pattern"));
  CHECK_THROWS_WITH(check_peft_adapter(dir.file("nothing"), shape, s),
                    Catch::Contains("nothing/adapter_config.json: missing (expected a PEFT adapter directory"));
}

TEST_CASE("an adapter directory is written beside its place and swapped in", "[hf][peft]") {
  TempDir dir;
  const GptShape shape = llama();
  const LoraSpec s = spec({"q_proj"});
  const ParamLayout layout = make_training_layout(shape, {s, {}});
  const std::vector<float> values(layout.total, 0.25f);
  const std::string out = dir.file("adapter");
  {  // abandoned before commit: nothing is left, not even the directory
    PeftAdapterWriter writer(out, layout, shape, s, HfOutput(DType::F32));
    for (const ParamGroup& g : layout.groups) writer.write_group(g, values.data() + g.offset);
  }
  CHECK_FALSE(std::filesystem::exists(out));
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path), std::filesystem::directory_iterator()) == 0);
  // Over an existing directory: its other files stay, the adapter's are replaced whole.
  std::filesystem::create_directories(out);
  dir.write("adapter/README.md", "kept");
  dir.write("adapter/adapter_config.json", "{}");
  PeftAdapterWriter writer(out, layout, shape, s, HfOutput(DType::F32));
  for (const ParamGroup& g : layout.groups) writer.write_group(g, values.data() + g.offset);
  CHECK(read_text_file(out + "/adapter_config.json") == "{}");  // unchanged until commit
  writer.commit();
  CHECK(read_text_file(out + "/README.md") == "kept");
  CHECK_NOTHROW(check_peft_adapter(out, shape, s));
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path), std::filesystem::directory_iterator()) == 1);
}

TEST_CASE("a directory written as a model loses an adapter's files, and one written as an adapter a model's weights",
          "[hf][peft]") {
  // transformers' from_pretrained takes a directory with adapter_config.json for the adapter on its
  // base, whatever weights lie beside it: a merged export over an adapter export must not leave one.
  TempDir dir;
  const GptShape shape = llama();
  const LoraSpec s = spec({"q_proj"});
  const ParamLayout adapter_layout = make_training_layout(shape, {s, {}});
  const ParamLayout model_layout = make_gpt_layout(shape);
  const std::vector<float> values(adapter_layout.total, 0.25f);
  const std::string out = dir.file("out");
  auto write_adapter = [&] {
    PeftAdapterWriter writer(out, adapter_layout, shape, s, HfOutput(DType::F32));
    for (const ParamGroup& g : adapter_layout.groups) writer.write_group(g, values.data() + g.offset);
    writer.commit();
  };
  auto write_model = [&] {
    HfModelWriter writer(out, model_layout, shape, HfOutput(DType::F32));
    for (const ParamGroup& g : model_layout.groups) writer.write_group(g, values.data() + g.offset);
    writer.commit();
  };
  auto names = [&] {
    std::set<std::string> n;
    for (const auto& e : std::filesystem::directory_iterator(out)) n.insert(e.path().filename().string());
    return n;
  };
  write_adapter();
  dir.write("out/zerotrain_base_model.json", "{}");  // as an adapter of a base directory records it
  dir.write("out/README.md", "kept");
  write_model();
  CHECK(names() == std::set<std::string>{"README.md", "config.json", "model.safetensors"});
  write_adapter();
  CHECK(names() ==
        std::set<std::string>{"README.md", "adapter_config.json", "adapter_model.safetensors", "config.json"});
}
