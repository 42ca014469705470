// A Hugging Face model directory's config.json as the model block (model.path, --model DIR): the
// published configs of the presets' models (transformers 4.x layout) resolve to those presets,
// 5.x's rope_parameters and 4.x's rope_scaling mean the same, transformers' defaults fill what a
// config leaves out, the model block's own keys and --set override it, and what is not
// implemented is refused naming config.json and its key.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "hf/hf_config.hpp"
#include "config/model_block.hpp"
#include "config_test_support.hpp"

using namespace zt::config;
using namespace zt::config::testing;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

// A fresh directory holding config.json = `config`.
std::string model_dir(const std::string& name, const json& config) {
  const fs::path dir = fs::temp_directory_path() / ("zt_hf_config_" + std::to_string(::getpid())) / name;
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << config.dump(2);
  return dir.string();
}

ModelConfig read_dir(const std::string& dir) { return read_model_block({{"path", dir}}, "--model " + dir); }

std::string error_reading(const std::string& dir) {
  try {
    read_dir(dir);
  } catch (const zt::Error& e) {
    return e.what();
  }
  FAIL("expected a zt::Error reading " << dir);
  return "";
}

// meta-llama/Llama-3.2-1B's config.json (transformers 4.45).
const json kLlama32 = json::parse(R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 128000, "eos_token_id": 128001, "head_dim": 64, "hidden_act": "silu", "hidden_size": 2048,
  "initializer_range": 0.02, "intermediate_size": 8192, "max_position_embeddings": 131072, "mlp_bias": false,
  "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8,
  "pretraining_tp": 1, "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "rope_theta": 500000.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
  "transformers_version": "4.45.0.dev0", "use_cache": true, "vocab_size": 128256})");

// Qwen/Qwen3-0.6B's (transformers 4.51).
const json kQwen3 = json::parse(R"({
  "architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu", "hidden_size": 1024,
  "initializer_range": 0.02, "intermediate_size": 3072, "max_position_embeddings": 40960,
  "max_window_layers": 28, "model_type": "qwen3", "num_attention_heads": 16, "num_hidden_layers": 28,
  "num_key_value_heads": 8, "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000,
  "sliding_window": null, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
  "transformers_version": "4.51.0", "use_cache": true, "use_sliding_window": false, "vocab_size": 151936})");

// Qwen/Qwen2.5-0.5B's: a sliding_window that use_sliding_window false leaves unused.
const json kQwen25 = json::parse(R"({
  "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
  "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 896, "initializer_range": 0.02,
  "intermediate_size": 4864, "max_position_embeddings": 32768, "max_window_layers": 24, "model_type": "qwen2",
  "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
  "rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
  "transformers_version": "4.40.1", "use_cache": true, "use_sliding_window": false, "vocab_size": 151936})");

// allenai/OLMoE-1B-7B-0924's (transformers 4.45).
const json kOlmoe = json::parse(R"({
  "architectures": ["OlmoeForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "clip_qkv": null,
  "eos_token_id": 50279, "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02,
  "intermediate_size": 1024, "max_position_embeddings": 4096, "model_type": "olmoe", "norm_topk_prob": false,
  "num_attention_heads": 16, "num_experts": 64, "num_experts_per_tok": 8, "num_hidden_layers": 16,
  "num_key_value_heads": 16, "output_router_logits": false, "pad_token_id": 1, "rms_norm_eps": 1e-05,
  "rope_scaling": null, "rope_theta": 10000.0, "router_aux_loss_coef": 0.01, "tie_word_embeddings": false,
  "torch_dtype": "bfloat16", "transformers_version": "4.45.0.dev0", "use_cache": true, "vocab_size": 50304})");

// mistralai/Mixtral-8x7B-v0.1's (transformers 4.36).
const json kMixtral = json::parse(R"({
  "architectures": ["MixtralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2,
  "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
  "max_position_embeddings": 32768, "model_type": "mixtral", "num_attention_heads": 32,
  "num_experts_per_tok": 2, "num_hidden_layers": 32, "num_key_value_heads": 8, "num_local_experts": 8,
  "output_router_logits": false, "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "router_aux_loss_coef": 0.02,
  "sliding_window": null, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "transformers_version": "4.36.0.dev0", "use_cache": true, "vocab_size": 32000})");

}  // namespace

TEST_CASE("the published config.json of each preset's model resolves to that preset", "[config][hf]") {
  CHECK(read_dir(model_dir("llama32", kLlama32)).preset == "llama-3.2-1b");
  CHECK(read_dir(model_dir("qwen3", kQwen3)).preset == "qwen3-0.6b");
  const ModelConfig qwen25 = read_dir(model_dir("qwen25", kQwen25));
  CHECK(qwen25.preset == "qwen2.5-0.5b");
  CHECK(qwen25.shape.sliding_window == 0);
  CHECK(qwen25.path == model_dir("qwen25", kQwen25));
  CHECK(read_dir(model_dir("olmoe", kOlmoe)).preset == "olmoe-1b-7b");
  CHECK(read_dir(model_dir("mixtral", kMixtral)).preset == "mixtral-8x7b");
}

TEST_CASE("OLMoE: OlmoeConfig's defaults, and what it may set that is not implemented", "[config][hf][moe]") {
  json minimal = {{"model_type", "olmoe"}, {"hidden_size", 64},        {"num_attention_heads", 4},
                  {"num_hidden_layers", 2}, {"intermediate_size", 32}, {"vocab_size", 300}};
  const ModelConfig m = read_dir(model_dir("olmoe_defaults", minimal));
  CHECK(m.shape.model_type == zt::ModelType::Olmoe);
  CHECK(m.shape.n_kv_head == 4);  // num_key_value_heads absent: num_attention_heads
  CHECK(m.shape.moe.num_experts == 64);
  CHECK(m.shape.moe.top_k == 8);
  CHECK_FALSE(m.shape.moe.norm_topk_prob);
  CHECK(m.shape.moe.router_aux_loss_coef == 0.01);
  CHECK(m.shape.expert_width() == 32);  // intermediate_size
  CHECK(m.shape.recipe().qk_norm_whole);
  json clipped = kOlmoe;
  clipped["clip_qkv"] = 8.5;
  CHECK_THAT(error_reading(model_dir("olmoe_clip", clipped)),
             Contains("config.json: clip_qkv: 8.5 is not implemented (expected null"));
  json grouped = kOlmoe;
  grouped["num_key_value_heads"] = 4;
  CHECK_THAT(error_reading(model_dir("olmoe_gqa", grouped)),
             Contains("(num_key_value_heads): model.n_kv_head: 4 with 4 key/value heads for 16 heads is not "
                      "implemented"));
  // The model block alone: olmoe's keys and OlmoeConfig's coefficient.
  const ModelConfig block = read_model_block({{"model_type", "olmoe"}, {"num_experts", 4}, {"num_experts_per_tok", 2},
                                              {"norm_topk_prob", true}}, "test");
  CHECK(block.shape.moe.norm_topk_prob);
  CHECK(block.shape.moe.router_aux_loss_coef == 0.01);
  CHECK_THROWS_WITH(read_model_block({{"model_type", "olmoe"}, {"num_experts", 4}, {"num_experts_per_tok", 2},
                                      {"moe_intermediate_size", 8}}, "test"),
                    Contains("model.moe_intermediate_size"));
}

TEST_CASE("transformers 5's rope_parameters and 4's rope_theta and rope_scaling read the same", "[config][hf]") {
  json v5 = kLlama32;
  v5.erase("rope_theta");
  v5.erase("rope_scaling");
  v5["rope_parameters"] = {{"rope_type", "llama3"},   {"rope_theta", 500000.0},
                           {"factor", 32.0},          {"low_freq_factor", 1.0},
                           {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
  CHECK(read_dir(model_dir("llama32_v5", v5)).preset == "llama-3.2-1b");
  // An older spelling of rope_scaling: "type".
  json legacy = kLlama32;
  legacy["rope_scaling"].erase("rope_type");
  legacy["rope_scaling"]["type"] = "llama3";
  CHECK(read_dir(model_dir("llama32_type", legacy)).preset == "llama-3.2-1b");
  // rope_type default in rope_parameters: no scaling, its rope_theta.
  json plain = kQwen3;
  plain.erase("rope_theta");
  plain.erase("rope_scaling");
  plain["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 1000000}};
  CHECK(read_dir(model_dir("qwen3_v5", plain)).preset == "qwen3-0.6b");
  // The directory transformers 5 wrote (tests/fixtures/hf, scripts/make_hf_dir_fixtures.py).
  const ModelConfig fixture = read_dir(std::string(ZT_SOURCE_DIR) + "/tests/fixtures/hf/llama3_dir_fp32");
  CHECK(fixture.shape.rope_theta == 500000.0);
  CHECK(fixture.shape.rope_scaling.type == zt::RopeType::Llama3);
  CHECK(fixture.shape.rope_scaling.factor == 8.0);
  CHECK(fixture.shape.rope_scaling.original_max_position_embeddings == 64);
  CHECK(fixture.shape.tied_head);
}

TEST_CASE("transformers' defaults: each family", "[config][hf]") {
  // Qwen3: head_dim 128, no attention bias, untied, eps 1e-6, theta 10000, 32768 positions.
  const ModelConfig q3 = read_dir(model_dir("qwen3_defaults", {{"model_type", "qwen3"},
                                                               {"hidden_size", 64},
                                                               {"num_attention_heads", 4},
                                                               {"num_key_value_heads", 2},
                                                               {"num_hidden_layers", 2},
                                                               {"intermediate_size", 96},
                                                               {"vocab_size", 300}}));
  CHECK(q3.shape.head_dim == 128);
  CHECK_FALSE(q3.shape.attention_bias);
  CHECK_FALSE(q3.shape.tied_head);
  CHECK(q3.shape.norm_eps == 1e-6);
  CHECK(q3.shape.rope_theta == 10000.0);
  CHECK(q3.shape.max_seq_len == 32768);
  // Llama: key/value heads = heads, head_dim = hidden / heads, 2048 positions.
  const ModelConfig llama = read_dir(model_dir("llama_defaults", {{"model_type", "llama"},
                                                                  {"hidden_size", 64},
                                                                  {"num_attention_heads", 4},
                                                                  {"num_hidden_layers", 2},
                                                                  {"intermediate_size", 96},
                                                                  {"vocab_size", 300}}));
  CHECK(llama.shape.n_kv_head == 4);
  CHECK(llama.shape.head_dim == 16);
  CHECK(llama.shape.max_seq_len == 2048);
  CHECK_FALSE(llama.shape.tied_head);
  // Mistral: 8 key/value heads, a 4096-token window.
  const ModelConfig mistral = read_dir(model_dir("mistral_defaults", {{"model_type", "mistral"},
                                                                      {"hidden_size", 64},
                                                                      {"num_attention_heads", 8},
                                                                      {"num_hidden_layers", 2},
                                                                      {"intermediate_size", 96},
                                                                      {"vocab_size", 300}}));
  CHECK(mistral.shape.n_kv_head == 8);
  CHECK(mistral.shape.sliding_window == 4096);
  // GPT-2: its own key names, n_inner null = 4 x n_embd, tied.
  const ModelConfig gpt2 = read_dir(model_dir("gpt2", {{"model_type", "gpt2"},
                                                       {"n_embd", 32},
                                                       {"n_head", 2},
                                                       {"n_layer", 2},
                                                       {"n_inner", nullptr},
                                                       {"vocab_size", 300},
                                                       {"n_positions", 40}}));
  CHECK(gpt2.shape.model_type == zt::ModelType::Gpt2);
  CHECK(gpt2.shape.d_model == 32);
  CHECK(gpt2.shape.max_seq_len == 40);
  CHECK(gpt2.shape.tied_head);
}

TEST_CASE("the model block's own keys and --set override config.json", "[config][hf]") {
  const std::string dir = model_dir("qwen3_override", kQwen3);
  const ModelConfig shorter = read_model_block({{"path", dir}, {"max_seq_len", 1024}}, "test");
  CHECK(shorter.shape.max_seq_len == 1024);
  CHECK(shorter.shape.n_layer == 28);
  ResolveOptions options;
  options.model = dir;
  options.overrides = {"model.max_seq_len=512", "data.seq_len=256"};
  const Config c = resolve_config({{"train_micro_batch_size_per_gpu", 1}}, options, "test.json");
  CHECK(c.model.shape.max_seq_len == 512);
  CHECK(c.model.shape.model_type == zt::ModelType::Qwen3);
  CHECK(c.model.path == dir);
  CHECK(c.model_file == dir + "/config.json");
  const json printed = to_json(c);
  CHECK(printed["model"]["path"] == dir);
  // The printed block reads back as the same model.
  const ModelConfig again = read_model_block(printed["model"], "printed");
  CHECK(again.shape.max_seq_len == 512);
  CHECK(again.shape.head_dim == 128);
}

TEST_CASE("which layers slide, as transformers' config classes decide", "[config][hf][window]") {
  // Qwen2: with use_sliding_window, layer i slides iff i >= max_window_layers.
  json qwen = kQwen25;
  qwen["use_sliding_window"] = true;
  qwen["max_window_layers"] = 21;
  const ModelConfig q = read_dir(model_dir("qwen25_window", qwen));
  CHECK(q.shape.sliding_window == 32768);
  CHECK(q.shape.layer_window(20) == 0);
  CHECK(q.shape.layer_window(21) == 32768);
  CHECK(q.shape.layer_window(23) == 32768);
  // max_window_layers absent: transformers' 28, past the 24 layers: none slides.
  qwen.erase("max_window_layers");
  const ModelConfig none = read_dir(model_dir("qwen25_default_layers", qwen));
  for (int l = 0; l < 24; ++l) CHECK(none.shape.layer_window(l) == 0);
  // layer_types wins whenever present.
  json listed = kQwen25;
  listed["use_sliding_window"] = true;
  listed["layer_types"] = json::array();
  for (int l = 0; l < 24; ++l) listed["layer_types"].push_back(l % 2 ? "full_attention" : "sliding_attention");
  const ModelConfig alternating = read_dir(model_dir("qwen25_alternating", listed));
  CHECK(alternating.shape.layer_window(0) == 32768);
  CHECK(alternating.shape.layer_window(1) == 0);
  // The printed block reads back as the same layers.
  CHECK(read_recorded_model(model_json(alternating), "printed").shape == alternating.shape);
  // A sliding layer without a window (use_sliding_window false makes sliding_window null):
  // transformers cannot build its mask.
  listed["use_sliding_window"] = false;
  const std::string no_window = model_dir("qwen25_no_window", listed);
  CHECK_THAT(error_reading(no_window), Contains(no_window + "/config.json (layer_types): model.layer_types: layer 0 "
                                                            "is sliding_attention but sliding_window is 0 (none)"));
  // Mistral: every layer slides; MistralConfig ignores layer_types, so one that says otherwise is refused.
  const std::string fixtures = std::string(ZT_SOURCE_DIR) + "/tests/fixtures/hf/";
  const ModelConfig mistral = read_dir(fixtures + "mistral_swa_fp32");
  CHECK(mistral.shape.sliding_window == 8);
  CHECK(mistral.shape.layer_types.empty());
  CHECK(mistral.shape.layer_window(1) == 8);
  json ministral = json::parse(std::ifstream(fixtures + "mistral_swa_fp32/config.json"));
  ministral["layer_types"] = {"full_attention", "sliding_attention"};
  CHECK_THAT(error_reading(model_dir("ministral", ministral)),
             Contains("config.json (layer_types): model.layer_types: layer 0 is full_attention, but mistral slides "
                      "every layer"));
  // transformers 5's Qwen2 directory: layer_types written out.
  const ModelConfig qwen2 = read_dir(fixtures + "qwen2_swa_fp32");
  CHECK(qwen2.shape.layer_window(0) == 0);
  CHECK(qwen2.shape.layer_window(1) == 8);
  CHECK(qwen2.shape.layer_window(2) == 8);
}

TEST_CASE("what is not implemented is refused naming config.json and the key", "[config][hf]") {
  json phi = kQwen3;
  phi["model_type"] = "phi3";
  const std::string phi_dir = model_dir("phi3", phi);
  CHECK_THAT(error_reading(phi_dir), Contains(phi_dir + "/config.json: model_type: \"phi3\" is not a model type") &&
                                         Contains("llama, mistral, qwen2, qwen3"));
  json yarn = kQwen3;
  yarn["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 32768}};
  CHECK_THAT(error_reading(model_dir("yarn", yarn)),
             Contains("config.json: rope_scaling.rope_type: \"yarn\" is not implemented"));
  json dynamic = kQwen3;
  dynamic.erase("rope_scaling");
  dynamic["rope_parameters"] = {{"rope_type", "dynamic"}, {"rope_theta", 10000}, {"factor", 2.0}};
  CHECK_THAT(error_reading(model_dir("dynamic", dynamic)),
             Contains("config.json: rope_parameters.rope_type: \"dynamic\" is not implemented"));
  json gelu = kQwen3;
  gelu["hidden_act"] = "gelu";
  CHECK_THAT(error_reading(model_dir("gelu", gelu)), Contains("config.json: hidden_act: \"gelu\" is not implemented"));
  // A value judged as the model block's: the message names config.json and its key.
  json heads = kQwen3;
  heads["num_key_value_heads"] = 3;
  const std::string heads_dir = model_dir("heads", heads);
  CHECK_THAT(error_reading(heads_dir), Contains(heads_dir + "/config.json (num_key_value_heads): model.n_kv_head: 3 "
                                                            "does not divide n_head 16"));
  json text = kQwen3;
  text["hidden_size"] = "1024";
  CHECK_THAT(error_reading(model_dir("text", text)), Contains("config.json (hidden_size): model.d_model:"));
  // Qwen3Config's 32 key/value heads do not divide 4 query heads.
  CHECK_THAT(error_reading(model_dir("qwen3_min", {{"model_type", "qwen3"}, {"num_attention_heads", 4}})),
             Contains("(num_key_value_heads): model.n_kv_head: 32 does not divide n_head 4"));
  const fs::path empty = fs::path(model_dir("empty", json::object())) / "sub";
  fs::create_directories(empty);
  CHECK_THROWS_WITH(resolve_model_argument(empty.string()), Contains("holds no config.json"));
  CHECK_THAT(error_reading(empty.string()), Contains(empty.string() + ": holds no config.json"));
  fs::remove_all(fs::temp_directory_path() / ("zt_hf_config_" + std::to_string(::getpid())));
}

TEST_CASE("Gemma configs as transformers 4.x writes them: defaults, which layers slide, what is refused",
          "[config][hf]") {
  // A Gemma 2 config without layer_types: even layers slide, the soft-capping defaults apply.
  const json gemma2 = {{"model_type", "gemma2"},  {"num_hidden_layers", 4}, {"hidden_size", 32},
                       {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"head_dim", 8},
                       {"intermediate_size", 48},  {"vocab_size", 200},     {"sliding_window", 8}};
  const ModelConfig g2 = read_dir(model_dir("gemma2", gemma2));
  CHECK(g2.shape.model_type == zt::ModelType::Gemma2);
  for (int l = 0; l < 4; ++l) CHECK(g2.shape.layer_window(l) == (l % 2 == 0 ? 8 : 0));
  CHECK(g2.shape.attn_logit_softcapping == 50.0);
  CHECK(g2.shape.final_logit_softcapping == 30.0);
  CHECK(g2.shape.query_pre_attn_scalar == 256.0);
  CHECK(g2.shape.tied_head);
  // Gemma 3 text with 4.x's keys: sliding_window_pattern, rope_local_base_freq, rope_scaling.
  json gemma3 = gemma2;
  gemma3["model_type"] = "gemma3_text";
  gemma3["num_hidden_layers"] = 6;
  gemma3["sliding_window_pattern"] = 3;
  gemma3["rope_local_base_freq"] = 5000.0;
  gemma3["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 8.0}};
  const ModelConfig g3 = read_dir(model_dir("gemma3", gemma3));
  for (int l = 0; l < 6; ++l) CHECK(g3.shape.layer_window(l) == (l % 3 == 2 ? 0 : 8));
  CHECK(g3.shape.rope_local_base_freq == 5000.0);
  CHECK(g3.shape.rope_theta == 1000000.0);
  CHECK(g3.shape.rope_scaling.type == zt::RopeType::Linear);
  CHECK(g3.shape.attn_logit_softcapping == 0.0);
  // A vision tower beside the language model, and the keys of later Gemmas, are refused by name.
  json vision = gemma3;
  vision["model_type"] = "gemma3";
  CHECK_THAT(error_reading(model_dir("vision", vision)),
             Contains("config.json: model_type: \"gemma3\" is Gemma3ForConditionalGeneration, a vision tower"));
  for (const char* key : {"num_kv_shared_layers", "hidden_size_per_layer_input"}) {
    json later = gemma3;
    later[key] = 4;
    CHECK_THAT(error_reading(model_dir(key, later)),
               Contains(std::string("config.json: ") + key + ": 4 is not implemented"));
  }
  json act = gemma2;
  act["hidden_activation"] = "silu";
  CHECK_THAT(error_reading(model_dir("act", act)),
             Contains("config.json: hidden_activation: \"silu\" is not implemented"));
}
