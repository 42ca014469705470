// The llama family's side of the model: the parameter layout of each model_type (groups, names,
// packed projections, vocabulary padding), initialisation, activation memory, FLOPs, and bad
// shapes refused by name. tests/model/test_hf_families.cpp checks the numbers against transformers.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/ledger.hpp"
#include "error_naming.hpp"
#include "model/gpt.hpp"

using namespace zt;

namespace {

GptShape qwen3_shape(bool tied) {
  GptShape s(2, 4, 32, 300, 64);
  s.model_type = ModelType::Qwen3;
  s.n_kv_head = 2;
  s.head_dim = 12;
  s.d_ff = 40;
  s.norm_eps = 1e-6;
  s.attention_bias = true;
  s.tied_head = tied;
  return s;
}

bool layout_has(const ParamLayout& layout, const std::string& name) { return layout.find(name) != nullptr; }

std::vector<std::string> tensor_names(const ParamGroup& g) {
  std::vector<std::string> names;
  for (auto& t : g.tensors) names.push_back(t.name);
  return names;
}

}  // namespace

TEST_CASE("llama-family layout: Hugging Face names and shapes, packed projections, padded vocabulary",
          "[model][layout][families]") {
  const GptShape shape = qwen3_shape(false);
  const ParamLayout layout = make_gpt_layout(shape);
  REQUIRE(layout.groups.size() == 5);
  CHECK(layout.groups[0].name == "embeddings");
  CHECK(layout.groups[1].name == "model.layers.0");
  CHECK(layout.groups[3].name == "norm");
  CHECK(layout.groups[4].name == "lm_head");
  const std::string p = "model.layers.1.";
  CHECK(tensor_names(layout.groups[2]) ==
        std::vector<std::string>{p + "input_layernorm.weight", p + "self_attn.q_proj.weight",
                                 p + "self_attn.k_proj.weight", p + "self_attn.v_proj.weight",
                                 p + "self_attn.q_proj.bias", p + "self_attn.k_proj.bias",
                                 p + "self_attn.v_proj.bias", p + "self_attn.q_norm.weight",
                                 p + "self_attn.k_norm.weight", p + "self_attn.o_proj.weight",
                                 p + "self_attn.o_proj.bias", p + "post_attention_layernorm.weight",
                                 p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight", p + "mlp.down_proj.weight"});
  auto at = [&](const std::string& name) {
    const TensorSpec* t = layout.find(name);
    REQUIRE(t != nullptr);
    return *t;
  };
  // nn.Linear [out, in]; q, k and v one after the other: one [(4 + 2·2)·12, 32] projection.
  CHECK(at(p + "self_attn.q_proj.weight").shape == std::vector<size_t>{48, 32});
  CHECK(at(p + "self_attn.k_proj.weight").shape == std::vector<size_t>{24, 32});
  CHECK(at(p + "self_attn.k_proj.weight").offset == at(p + "self_attn.q_proj.weight").offset + 48 * 32);
  CHECK(at(p + "self_attn.v_proj.weight").offset == at(p + "self_attn.k_proj.weight").offset + 24 * 32);
  CHECK(at(p + "self_attn.o_proj.weight").shape == std::vector<size_t>{32, 48});
  CHECK(at(p + "mlp.up_proj.weight").offset == at(p + "mlp.gate_proj.weight").offset + 40 * 32);
  CHECK(at(p + "mlp.down_proj.weight").shape == std::vector<size_t>{32, 40});
  CHECK(at(p + "self_attn.q_norm.weight").shape == std::vector<size_t>{12});
  CHECK(at("model.embed_tokens.weight").shape == std::vector<size_t>{384, 32});
  CHECK(at("lm_head.weight").shape == std::vector<size_t>{384, 32});
  CHECK(at("model.norm.weight").shape == std::vector<size_t>{32});

  // The roles the model computes with point at the first tensor of each.
  const RoleOffsets roles = block_role_offsets(shape);
  const size_t g = layout.groups[2].offset;
  CHECK(roles[size_t(BlockRole::QkvWeight)] == at(p + "self_attn.q_proj.weight").offset - g);
  CHECK(roles[size_t(BlockRole::QkvBias)] == at(p + "self_attn.q_proj.bias").offset - g);
  CHECK(roles[size_t(BlockRole::FcWeight)] == at(p + "mlp.gate_proj.weight").offset - g);
  CHECK(roles[size_t(BlockRole::Norm1Bias)] == kAbsent);
  CHECK(roles[size_t(BlockRole::FcBias)] == kAbsent);

  // As a checkpoint holds them: the real vocabulary's rows, padding after.
  size_t total = 0;
  for (const HfTensor& t : hf_tensors(shape)) {
    total += t.padding;
    if (t.name == "lm_head.weight" || t.name == "model.embed_tokens.weight") {
      CHECK(t.shape == std::vector<size_t>{300, 32});
      CHECK(t.padding == 84 * 32);
    } else {
      CHECK(t.padding == 0);
    }
  }
  CHECK(layout.total == shape.num_params() + total);
  CHECK(layout.total == shape.flat_size());

  // The recipe's switches for each family.
  GptShape s = shape;
  s.model_type = ModelType::Qwen2;
  s.attention_bias = false;
  CHECK(layout_has(make_gpt_layout(s), "model.layers.0.self_attn.k_proj.bias"));
  CHECK_FALSE(layout_has(make_gpt_layout(s), "model.layers.0.self_attn.o_proj.bias"));
  CHECK_FALSE(layout_has(make_gpt_layout(s), "model.layers.0.self_attn.q_norm.weight"));
  s.model_type = ModelType::Llama;
  s.mlp_bias = true;
  CHECK_FALSE(layout_has(make_gpt_layout(s), "model.layers.0.self_attn.k_proj.bias"));
  CHECK(layout_has(make_gpt_layout(s), "model.layers.0.mlp.down_proj.bias"));
  s.attention_bias = true;
  CHECK(layout_has(make_gpt_layout(s), "model.layers.0.self_attn.o_proj.bias"));
  CHECK(make_gpt_layout(s).total == s.flat_size());
}

TEST_CASE("llama-family initialisation: normal(0, 0.02) matrices, unit norms, zero biases and padding",
          "[model][init][families]") {
  GptShape shape = qwen3_shape(false);
  shape.d_model = 64;
  shape.d_ff = 128;
  Gpt model(shape, 1, 16);
  const ParamLayout& layout = model.layout();
  std::vector<float> p(layout.total);
  model.init_params(p.data(), 0, p.size(), 42);
  for (auto& g : layout.groups)
    for (auto& t : g.tensors) {
      INFO(t.name);
      const float* v = p.data() + t.offset;
      if (t.shape.size() == 1) {
        const float want = t.name.ends_with(".weight") ? 1.0f : 0.0f;
        for (size_t i = 0; i < t.numel(); i++) REQUIRE(v[i] == want);
        continue;
      }
      const size_t real = has_vocabulary_rows(t.name) ? 300 * t.shape[1] : t.numel();
      double s2 = 0;
      for (size_t i = 0; i < real; i++) s2 += double(v[i]) * v[i];
      CHECK(std::sqrt(s2 / double(real)) == Approx(0.02).epsilon(0.08));  // o_proj and down_proj too
      for (size_t i = real; i < t.numel(); i++) REQUIRE(v[i] == 0.0f);
    }
}

TEST_CASE("llama-family activation bytes are known before allocating, exactly as the ledger counts them",
          "[model][memory][families]") {
  for (bool tied : {true, false})
    for (auto [B, T, slots] : {std::tuple{2, 16, 2}, std::tuple{3, 7, 1}}) {
      GptShape shape = qwen3_shape(tied);
      for (ModelType type : {ModelType::Llama, ModelType::Qwen3}) {
        shape.model_type = type;
        INFO(describe(shape) << " B " << B << " T " << T << " slots " << slots);
        const size_t before = MemoryLedger::instance().stats().cur(MemCategory::Activations);
        GptActivations acts(shape, B, T, slots);
        const size_t held = MemoryLedger::instance().stats().cur(MemCategory::Activations) - before;
        CHECK(GptActivations::bytes(shape, B, T, slots) == held);
      }
    }
}

TEST_CASE("FLOPs per token count grouped-query projections, SwiGLU and an untied head, not the lookup",
          "[model][families]") {
  const GptShape tied = qwen3_shape(true), untied = qwen3_shape(false);
  Gpt a(tied, 1, 16), b(untied, 1, 16);
  // 12·L·NH·hd·T for attention; 6 per parameter for everything else.
  CHECK(a.flops_per_token() == 6 * tied.num_params() + 12 * 2 * 48 * 16);
  CHECK(b.num_params() == a.num_params() + 300 * 32);
  CHECK(b.flops_per_token() == a.flops_per_token());  // the untied head's matmul replaces the tied one
  // Llama 3.2 1B, tied: 6·N + 12·16·2048·T.
  GptShape llama = *gpt_preset("llama-3.2-1b");
  CHECK(Gpt(llama, 1, 8).flops_per_token() == 6 * size_t(1235814400) + 12 * size_t(16) * 2048 * 8);
}

TEST_CASE("FLOPs per token count a sliding layer's keys within its window", "[model][families][window]") {
  GptShape shape = qwen3_shape(true);  // 2 layers, q width 48
  shape.sliding_window = 4;
  shape.layer_types = {LayerAttention::Full, LayerAttention::Sliding};
  const Gpt model(shape, 1, 16);
  CHECK(model.flops_per_pair().full == 12 * 48);
  CHECK(model.flops_per_pair().sliding == 12 * 48);
  // The full layer's query counts 16 keys, the sliding one's 4.
  CHECK(model.flops_per_token() == 6 * shape.num_params() + 12 * 48 * 16 + 12 * 48 * 4);
  CHECK(model.flops_per_token(3) == 6 * shape.num_params() + 12 * 48 * 3 + 12 * 48 * 3);
  shape.layer_types.clear();  // both layers slide
  CHECK(Gpt(shape, 1, 16).flops_per_token() == 6 * shape.num_params() + 2 * 12 * 48 * 4);
  CHECK(Gpt(shape, 1, 16).flops_per_pair().full == 0);
}

TEST_CASE("llama-family shapes and bounds that cannot run are refused, naming the field", "[model][families]") {
  GptShape bad = qwen3_shape(true);
  bad.n_kv_head = 3;
  test::require_error_naming([&] { return Gpt(bad, 1, 8); }, "model.n_kv_head: 3 does not divide n_head 4");
  bad = qwen3_shape(true);
  bad.head_dim = 7;
  test::require_error_naming([&] { return make_gpt_layout(bad); }, "model.head_dim: 7 is odd");
  bad = qwen3_shape(true);
  bad.model_type = ModelType::Mistral;
  bad.attention_bias = false;
  bad.sliding_window = 8;
  CHECK_NOTHROW(Gpt(bad, 1, 8));   // the window covers the sequence: the same attention
  CHECK_NOTHROW(Gpt(bad, 1, 24));  // sliding-window attention over a longer one
  bad.layer_types = {LayerAttention::Full, LayerAttention::Sliding};
  test::require_error_naming([&] { return Gpt(bad, 1, 8); }, "model.layer_types: layer 0 is full_attention");
  bad = *gpt_preset("toy");
  bad.tied_head = false;
  test::require_error_naming([&] { return make_gpt_layout(bad); }, "model.tie_word_embeddings");
}
