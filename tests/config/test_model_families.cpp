// The model block's architecture keys: the llama family's presets and keys, their defaults, what
// is refused (naming the key), the printed block reading back to the same architecture, and the
// config.json key each stands for.
#include <set>

#include "config/model_block.hpp"
#include "config_test_support.hpp"
#include "hf/hf_config.hpp"
#include "model/gpt_shape.hpp"
#include "model/lora.hpp"

using namespace zt::config;
using namespace zt::config::testing;

TEST_CASE("the llama-family presets resolve to the published shapes and parameter counts") {
  // Counted by transformers itself for these configs (AutoModelForCausalLM.from_config).
  const std::pair<const char*, size_t> published[] = {
      {"llama-3.2-1b", 1235814400}, {"qwen3-0.6b", 596049920}, {"qwen2.5-0.5b", 494032768},
      {"qwen3-30b-a3b", 30532122624}, {"olmoe-1b-7b", 6919161856}, {"mixtral-8x7b", 46702792704},
      {"gemma-3-1b", 999885952},    {"gemma-3-270m", 268098176}};

  for (auto [name, count] : published) {
    INFO(name);
    auto m = resolve(with({{"model", {{"preset", name}}}, {"data", {{"seq_len", 1024}}}})).model;
    CHECK(m.preset == name);
    CHECK(m.shape.num_params() == count);
  }
  auto llama = resolve(with({{"model", {{"preset", "llama-3.2-1b"}}}, {"data", {{"seq_len", 64}}}})).model;
  CHECK(llama.shape.model_type == zt::ModelType::Llama);
  CHECK(llama.shape.n_kv_head == 8);
  CHECK(llama.shape.head_dim == 64);
  CHECK(llama.shape.rope_scaling.type == zt::RopeType::Llama3);
  CHECK(llama.shape.rope_scaling.factor == 32.0);
  CHECK(llama.shape.rope_scaling.original_max_position_embeddings == 8192);
  auto qwen3 = resolve(with({{"model", {{"preset", "qwen3-tiny"}}}})).model;
  CHECK(qwen3.shape.head_dim * qwen3.shape.n_head != qwen3.shape.d_model);  // head_dim free of d_model
  CHECK(qwen3.shape.tied_head);
  // Qwen3-30B-A3B: 128 experts of 768 in each of its 48 layers, 8 per token (3.3B active).
  auto moe = resolve(with({{"model", {{"preset", "qwen3-30b-a3b"}}}, {"data", {{"seq_len", 64}}}})).model;
  CHECK(moe.shape.model_type == zt::ModelType::Qwen3Moe);
  CHECK(moe.shape.moe.num_experts == 128);
  CHECK(moe.shape.moe.top_k == 8);
  CHECK(moe.shape.active_params() == 30532122624 - size_t(48) * 120 * 3 * 2048 * 768);
  // OLMoE-1B-7B (1.3B active: 8 of 64 experts of 1024) and Mixtral-8x7B (12.9B active: 2 of 8 of 14336).
  CHECK(zt::gpt_preset("olmoe-1b-7b")->active_params() == 1282017280);
  CHECK(zt::gpt_preset("mixtral-8x7b")->active_params() == 12879925248);
  auto gemma = resolve(with({{"model", {{"preset", "gemma-3-1b"}}}, {"data", {{"seq_len", 2048}}}})).model;
  CHECK(gemma.shape.model_type == zt::ModelType::Gemma3Text);
  for (int l = 0; l < gemma.shape.n_layer; ++l) CHECK(gemma.shape.layer_window(l) == (l % 6 == 5 ? 0 : 512));
}

TEST_CASE("gemma: a model block without layer_types slides the layers the family's config class does") {
  // layer_types null: Gemma2Config's even layers, Gemma3TextConfig's all but every sixth.
  const nlohmann::json gemma2 = {{"preset", "custom"}, {"model_type", "gemma2"}, {"n_layer", 4},
                                 {"n_head", 4},        {"d_model", 32},          {"vocab_size", 64},
                                 {"max_seq_len", 64},  {"sliding_window", 8},    {"layer_types", nullptr}};
  auto g2 = resolve(with({{"model", gemma2}, {"data", {{"seq_len", 64}}}})).model;
  for (int l = 0; l < 4; ++l) CHECK(g2.shape.layer_window(l) == (l % 2 == 0 ? 8 : 0));
  nlohmann::json gemma3 = gemma2;
  gemma3["model_type"] = "gemma3_text";
  gemma3["n_layer"] = 7;
  gemma3.erase("layer_types");  // absent too
  auto g3 = resolve(with({{"model", gemma3}, {"data", {{"seq_len", 64}}}})).model;
  for (int l = 0; l < 7; ++l) CHECK(g3.shape.layer_window(l) == (l == 5 ? 0 : 8));
  // The preset with fewer layers: the rule over them, not the preset's list of 26.
  auto fewer =
      resolve(with({{"model", {{"preset", "gemma-3-1b"}, {"n_layer", 8}}}, {"data", {{"seq_len", 2048}}}})).model;
  REQUIRE(fewer.shape.n_layer == 8);
  for (int l = 0; l < 8; ++l) CHECK(fewer.shape.layer_window(l) == (l == 5 ? 0 : 512));
  // A list given is the list.
  gemma3["layer_types"] = {"full_attention", "sliding_attention", "full_attention", "sliding_attention",
                           "full_attention", "sliding_attention", "full_attention"};
  auto listed = resolve(with({{"model", gemma3}, {"data", {{"seq_len", 64}}}})).model;
  for (int l = 0; l < 7; ++l) CHECK(listed.shape.layer_window(l) == (l % 2 == 1 ? 8 : 0));
  // Every layer sliding, listed: the printed block lists them (its null would be the rule's).
  gemma3["layer_types"] = std::vector<std::string>(7, "sliding_attention");
  const auto every = resolve(with({{"model", gemma3}, {"data", {{"seq_len", 64}}}}));
  json printed = to_json(every)["model"];
  printed.erase("preset");
  CHECK(printed["layer_types"].size() == 7);
  auto again = resolve(with({{"model", printed}, {"data", {{"seq_len", 64}}}})).model;
  for (int l = 0; l < 7; ++l) CHECK(again.shape.layer_window(l) == 8);
}

TEST_CASE("the model's description counts its layers in the singular and the plural") {
  const nlohmann::json gemma2 = {{"preset", "custom"}, {"model_type", "gemma2"}, {"n_layer", 2},
                                 {"n_head", 4},        {"d_model", 32},          {"vocab_size", 64},
                                 {"max_seq_len", 64},  {"sliding_window", 16}};
  const std::string two = zt::describe(resolve(with({{"model", gemma2}, {"data", {{"seq_len", 64}}}})).model.shape);
  CHECK_THAT(two, Catch::StartsWith("Gemma 2 2 layers, ") && Catch::EndsWith(", sliding window 16 in 1 layer"));
  nlohmann::json one = gemma2;
  one["n_layer"] = 1;
  CHECK_THAT(zt::describe(resolve(with({{"model", one}, {"data", {{"seq_len", 64}}}})).model.shape),
             Catch::StartsWith("Gemma 2 1 layer, ") && Catch::EndsWith(", sliding window 16"));
  const auto moe = resolve(with({{"model", {{"preset", "qwen3-moe-tiny"}, {"mlp_only_layers", {0}}}}})).model;
  CHECK_THAT(zt::describe(moe.shape), Catch::EndsWith(" experts (top 2) of 96 in 1 layer, untied LM head"));
  const auto all = resolve(with({{"model", {{"preset", "qwen3-moe-tiny"}}}})).model;
  CHECK_THAT(zt::describe(all.shape), Catch::EndsWith(" experts (top 2) of 96 in 2 layers, untied LM head"));
}

TEST_CASE("experts: the model block reads the mixture-of-experts keys and refuses what does not fit") {
  auto m = resolve(with({{"model", {{"preset", "qwen3-moe-tiny"}, {"mlp_only_layers", {0}},
                                    {"output_router_logits", true}, {"router_aux_loss_coef", 0.02}}}}))
               .model;
  CHECK(m.preset == "custom");
  CHECK(zt::gpt_preset("qwen3-moe-tiny")->num_params() == 230336);  // transformers' count
  CHECK_FALSE(m.shape.sparse(0));  // dense: in mlp_only_layers
  CHECK(m.shape.sparse(1));
  CHECK(m.shape.moe.output_router_logits);
  CHECK(m.shape.moe.router_aux_loss_coef == 0.02);
  CHECK(m.shape.block_params(0) != m.shape.block_params(1));
  CHECK(error_of(with({{"model", {{"preset", "qwen3-moe-tiny"}, {"num_experts_per_tok", 5}}}})) ==
        "test.json: model.num_experts_per_tok: 5 (expected 1 to num_experts 4)");
  CHECK(error_of(with({{"model", {{"preset", "qwen3-moe-tiny"}, {"mlp_only_layers", {2}}}}})) ==
        "test.json: model.mlp_only_layers: layer 2 is not one of the 2 layers");
  CHECK(error_of(with({{"model", {{"preset", "qwen3-tiny"}, {"num_experts", 4}}}})).find("model.num_experts") !=
        std::string::npos);  // qwen3 has no experts: an unknown key there
  // LoRA reaches the attention of a model with experts, not its experts.
  const zt::GptShape tiny = *zt::gpt_preset("qwen3-moe-tiny");
  CHECK(zt::lora_sites(tiny, {4, 8.0, 0.0, false, {"q_proj", "o_proj"}}).size() == 2);
  for (const char* target : {"gate_proj", "down_proj", "all-linear"})
    CHECK_THROWS_WITH(zt::lora_sites(tiny, {4, 8.0, 0.0, false, {target}}),
                      Catch::Contains("LoRA on the experts is not implemented"));
}

TEST_CASE("model_type on a preset of another family starts from transformers' defaults") {
  auto m = resolve(with({{"model", {{"model_type", "llama"}, {"n_kv_head", 2}, {"d_ff", 172}}}})).model;
  CHECK(m.preset == "custom");
  CHECK(m.shape.model_type == zt::ModelType::Llama);
  CHECK(m.shape.n_layer == 2);  // toy's sizes
  CHECK(m.shape.d_model == 64);
  CHECK(m.shape.n_kv_head == 2);
  CHECK(m.shape.head_dim == 16);
  CHECK(m.shape.d_ff == 172);
  CHECK(m.shape.norm_eps == 1e-6);
  CHECK(m.shape.rope_theta == 10000.0);
  CHECK_FALSE(m.shape.tied_head);
  CHECK_FALSE(m.shape.attention_bias);
  // The same keys as a preset has them name the preset.
  auto tiny = resolve(with({{"model", {{"model_type", "llama"}, {"n_kv_head", 2}, {"d_ff", 176}, {"norm_eps", 1e-5},
                                       {"tie_word_embeddings", true}}}}))
                  .model;
  CHECK(tiny.preset == "llama-tiny");
}

TEST_CASE("the printed model block reads back to the same architecture") {
  for (const char* preset : {"toy", "llama-3.2-1b", "qwen3-tiny", "qwen2.5-0.5b", "gemma-3-1b"}) {
    INFO(preset);
    auto c = resolve(with({{"model", {{"preset", preset}}}, {"data", {{"seq_len", 64}}}}));
    json printed = to_json(c)["model"];
    printed.erase("preset");
    auto again = resolve(with({{"model", printed}, {"data", {{"seq_len", 64}}}}));
    CHECK(again.model.shape == c.model.shape.resolved());
    CHECK(again.model.preset == preset);
  }
  // GPT-2's architecture is fixed: its block shows the sizes alone.
  json gpt2 = to_json(resolve(with({})))["model"];
  CHECK(gpt2["model_type"] == "gpt2");
  CHECK_FALSE(gpt2.contains("rope_theta"));
  CHECK_FALSE(gpt2.contains("n_kv_head"));
  CHECK(to_json(resolve(with({{"model", {{"preset", "qwen3-tiny"}}}})))["model"]["rope_scaling"].is_null());
}

TEST_CASE("architecture keys that do not apply, or that zerotrain does not implement, are refused by name") {
  auto llama = [](json keys) {
    keys["preset"] = "llama-tiny";
    return with({{"model", keys}});
  };
  CHECK(error_of(llama({{"n_kv_head", 3}})) ==
        "test.json: model.n_kv_head: 3 does not divide n_head 4 (expected a divisor of n_head: 1 for multi-query "
        "attention up to n_head for multi-head attention)");
  CHECK(error_of(llama({{"head_dim", 15}})).find("test.json: model.head_dim: 15 is odd") == 0);
  CHECK(error_of(llama({{"rope_scaling", {{"rope_type", "yarn"}, {"factor", 4.0}}}}))
            .find("test.json: model.rope_scaling.rope_type: \"yarn\" is not implemented") == 0);
  for (const char* type : {"dynamic", "longrope"})
    CHECK(error_of(llama({{"rope_scaling", {{"rope_type", type}}}})).find("is not implemented") != std::string::npos);
  CHECK(error_of(llama({{"rope_scaling", {{"rope_type", "llama3"}, {"factor", 8.0}}}})) ==
        "test.json: model.rope_scaling.low_freq_factor: is missing (rope_type llama3 needs factor, low_freq_factor, "
        "high_freq_factor and original_max_position_embeddings)");
  CHECK(error_of(llama({{"rope_scaling", {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 4.0},
                                          {"high_freq_factor", 1.0}, {"original_max_position_embeddings", 8192}}}}))
            .find("test.json: model.rope_scaling.high_freq_factor: 1 is not above low_freq_factor 4") == 0);
  CHECK(error_of(llama({{"rope_scaling", {{"rope_type", "llama3"}, {"factr", 8.0}}}}))
            .find("test.json: model.rope_scaling.factr: unknown key") == 0);
  CHECK(error_of(llama({{"mlp_bias", true}, {"model_type", "qwen2"}})) ==
        "test.json: model.mlp_bias: qwen2 has no such option (only llama does)");
  CHECK(error_of(llama({{"attention_bias", true}, {"model_type", "mistral"}}))
            .find("model.attention_bias: mistral has no such option") != std::string::npos);
  CHECK(error_of(llama({{"sliding_window", 64}})) ==
        "test.json: model.sliding_window: llama has no sliding-window attention (expected 0)");
  // Sequences longer than the window: sliding-window attention.
  CHECK(resolve(with({{"model", {{"preset", "llama-tiny"}, {"model_type", "mistral"}, {"sliding_window", 64}}},
                      {"data", {{"seq_len", 128}}}}))
            .model.shape.sliding_window == 64);
  // layer_types: which layers slide (qwen2, qwen3); mistral slides every layer.
  const zt::GptShape qwen = resolve(with({{"model", {{"preset", "llama-tiny"}, {"model_type", "qwen2"},
                                                 {"sliding_window", 16},
                                                 {"layer_types", {"full_attention", "sliding_attention"}}}}}))
                            .model.shape;
  CHECK(qwen.layer_window(0) == 0);
  CHECK(qwen.layer_window(1) == 16);
  CHECK(resolve(with({{"model", {{"preset", "llama-tiny"}, {"model_type", "qwen2"}, {"sliding_window", 16},
                                 {"layer_types", {"sliding_attention", "sliding_attention"}}}}}))
            .model.shape.layer_types.empty());  // every layer: the window alone says it
  CHECK(error_of(llama({{"model_type", "qwen2"}, {"sliding_window", 16}, {"layer_types", {"sliding_attention"}}})) ==
        "test.json: model.layer_types: 1 entries for n_layer 2 (expected one per layer)");
  CHECK(error_of(llama({{"model_type", "qwen2"}, {"layer_types", {"full_attention", "sliding_attention"}}})) ==
        "test.json: model.layer_types: layer 1 is sliding_attention but sliding_window is 0 (none)");
  CHECK(error_of(llama({{"model_type", "qwen3"}, {"sliding_window", 16},
                        {"layer_types", {"chunked_attention", "sliding_attention"}}})) ==
        "test.json: model.layer_types: entry 0 \"chunked_attention\" is not implemented (expected sliding_attention "
        "or full_attention)");
  CHECK(error_of(llama({{"model_type", "mistral"}, {"sliding_window", 16},
                        {"layer_types", {"full_attention", "sliding_attention"}}}))
            .find("test.json: model.layer_types: layer 0 is full_attention, but mistral slides every layer") == 0);
  CHECK(error_of(llama({{"layer_types", {"full_attention", "full_attention"}}})) ==
        "test.json: model.layer_types: llama has no sliding-window attention (expected none)");
  // GPT-2 keeps its fixed architecture.
  CHECK(error_of(with({{"model", {{"tie_word_embeddings", false}}}})) ==
        "test.json: model.tie_word_embeddings: false: GPT-2's LM head is its token embedding (expected true)");
  CHECK(error_of(with({{"model", {{"rope_theta", 10000}}}})).find("model.rope_theta: is given for model_type gpt2") !=
        std::string::npos);
  CHECK(error_of(with({{"model", {{"n_kv_head", 2}}}})).find("model.n_kv_head: 2: GPT-2 has one key/value head") !=
        std::string::npos);
  CHECK(error_of(with({{"model", {{"norm_eps", 1e-6}}}})).find("model.norm_eps: 1e-06: GPT-2's LayerNorm uses 1e-5") !=
        std::string::npos);
  CHECK(error_of(with({{"model", {{"model_type", "gemma"}}}})).find("model.model_type: \"gemma\" is not valid") !=
        std::string::npos);
}

TEST_CASE("every model key has its config.json name, and every printed model key is in the table") {
  std::set<std::string> printed;
  // The llama family's keys, those of the families with experts (qwen2_moe's are qwen3_moe's and
  // its shared expert's) and Gemma's.
  const json qwen2_moe = {{"preset", "qwen3-moe-tiny"}, {"model_type", "qwen2_moe"},
                          {"num_experts", 4},           {"num_experts_per_tok", 2},
                          {"moe_intermediate_size", 96}, {"shared_expert_intermediate_size", 64}};
  for (const json& block : {json{{"preset", "llama-tiny"}}, qwen2_moe, json{{"preset", "gemma-3-270m"}}}) {
    const json model = to_json(resolve(with({{"model", block}})))["model"];
    for (auto it = model.begin(); it != model.end(); ++it) printed.insert(it.key());
  }
  printed.erase("preset");
  printed.erase("path");  // the directory whose config.json the table reads
  std::set<std::string> mapped;
  for (const zt::HfConfigKey& k : zt::hf_config_keys()) {
    mapped.insert(k.key);
    CHECK(k.hf != nullptr);
  }
  CHECK(mapped == printed);
}
