#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../data/temp_dir.hpp"
#include "ckpt/safetensors.hpp"
#include "core/error.hpp"

using namespace zt;

namespace {

// A 1-layer GPT-2 layout by hand: C = 4, padded vocabulary 8 (6 real tokens), T = 3.
ParamLayout tiny_layout() {
  const size_t C = 4, V = 8, T = 3;
  ParamLayout layout;
  size_t offset = 0;
  auto group = [&](const std::string& name, std::vector<std::pair<std::string, std::vector<size_t>>> tensors) {
    ParamGroup g{name, offset, 0, {}};
    for (auto& [tname, shape] : tensors) {
      TensorSpec t{tname, offset, shape, shape.size() >= 2};
      offset += t.numel();
      g.tensors.push_back(t);
    }
    g.size = offset - g.offset;
    layout.groups.push_back(g);
  };
  group("embeddings", {{"wte.weight", {V, C}}, {"wpe.weight", {T, C}}});
  group("h.0", {{"h.0.ln_1.weight", {C}},
                {"h.0.ln_1.bias", {C}},
                {"h.0.attn.c_attn.weight", {C, 3 * C}},
                {"h.0.attn.c_attn.bias", {3 * C}},
                {"h.0.attn.c_proj.weight", {C, C}},
                {"h.0.attn.c_proj.bias", {C}},
                {"h.0.ln_2.weight", {C}},
                {"h.0.ln_2.bias", {C}},
                {"h.0.mlp.c_fc.weight", {C, 4 * C}},
                {"h.0.mlp.c_fc.bias", {4 * C}},
                {"h.0.mlp.c_proj.weight", {4 * C, C}},
                {"h.0.mlp.c_proj.bias", {C}}});
  group("ln_f", {{"ln_f.weight", {C}}, {"ln_f.bias", {C}}});
  layout.total = offset;
  return layout;
}

std::vector<float> ramp(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::sin(float(i) * 0.37f) + float(i) * 1e-3f;
  return v;
}

}  // namespace

TEST_CASE("GPT-2 safetensors round trip with the vocabulary unpadded", "[safetensors][gpt2]") {
  TempDir dir;
  ParamLayout layout = tiny_layout();
  std::vector<float> flat = ramp(layout.total);
  const std::string path = dir.file("model.safetensors");
  save_gpt2_safetensors(path, layout, flat.data(), 6);

  SafetensorsReader r(path);
  CHECK(r.metadata().at("format") == "pt");  // transformers refuses files without it
  size_t count = 0;
  for (auto& g : layout.groups) count += g.tensors.size();
  CHECK(r.tensors().size() == count);
  CHECK(r.find("wte.weight")->shape == std::vector<uint64_t>{6, 4});
  CHECK(r.find("h.0.attn.c_attn.weight")->shape == std::vector<uint64_t>{4, 12});
  CHECK(r.find("h.0.mlp.c_proj.weight")->shape == std::vector<uint64_t>{16, 4});
  for (auto& t : r.tensors()) CHECK(t.dtype == "F32");

  std::vector<float> loaded(layout.total, 42.f);
  load_gpt2_safetensors(path, layout, loaded.data(), 6);
  const TensorSpec* wte = layout.find("wte.weight");
  for (size_t i = 0; i < layout.total; ++i) {
    bool padding = i >= wte->offset + 6 * 4 && i < wte->offset + wte->numel();
    REQUIRE(loaded[i] == (padding ? 0.f : flat[i]));
  }
}

TEST_CASE("GPT-2 loading accepts Hugging Face prefixes, extra tensors and bf16", "[safetensors][gpt2]") {
  TempDir dir;
  ParamLayout layout = tiny_layout();
  std::vector<float> flat = ramp(layout.total);
  std::vector<uint16_t> as_bf16(layout.total);
  from_f32(DType::BF16, flat.data(), as_bf16.data(), layout.total);
  std::vector<SafetensorsTensor> tensors;
  for (auto& g : layout.groups)
    for (auto& t : g.tensors) {
      std::vector<uint64_t> shape(t.shape.begin(), t.shape.end());
      if (t.name == "wte.weight") shape[0] = 6;
      tensors.push_back({"transformer." + t.name, DType::BF16, shape, as_bf16.data() + t.offset});
    }
  std::vector<float> causal_mask(9, 1.f);
  tensors.push_back({"transformer.h.0.attn.bias", DType::F32, {1, 1, 3, 3}, causal_mask.data()});
  tensors.push_back({"lm_head.weight", DType::BF16, {6, 4}, as_bf16.data() + layout.find("wte.weight")->offset});
  const std::string path = dir.file("hf.safetensors");
  write_safetensors(path, tensors, {{"format", "pt"}});

  std::vector<float> loaded(layout.total, -1.f);
  load_gpt2_safetensors(path, layout, loaded.data(), 6);
  const TensorSpec* wte = layout.find("wte.weight");
  for (size_t i = 0; i < layout.total; ++i) {
    bool padding = i >= wte->offset + 24 && i < wte->offset + wte->numel();
    REQUIRE(loaded[i] == (padding ? 0.f : bf16_to_f32(as_bf16[i])));
  }
}

TEST_CASE("GPT-2 loading names a missing tensor and a wrong shape", "[safetensors][gpt2]") {
  TempDir dir;
  ParamLayout layout = tiny_layout();
  std::vector<float> flat = ramp(layout.total), out(layout.total);
  const std::string path = dir.file("m.safetensors");
  save_gpt2_safetensors(path, layout, flat.data(), 6);
  // Another vocabulary: wte.weight does not match.
  CHECK_THROWS_WITH(load_gpt2_safetensors(path, layout, out.data(), 7),
                    Catch::Contains("m.safetensors") && Catch::Contains("wte.weight") &&
                        Catch::Contains("[6, 4]") && Catch::Contains("[7, 4]"));
  // A model with a wider MLP: shape mismatch names the tensor and both shapes.
  ParamLayout wider = layout;
  for (auto& g : wider.groups)
    for (auto& t : g.tensors)
      if (t.name == "h.0.mlp.c_fc.bias") t.shape = {20};
  CHECK_THROWS_WITH(load_gpt2_safetensors(path, wider, out.data(), 6),
                    Catch::Contains("h.0.mlp.c_fc.bias") && Catch::Contains("[16]") && Catch::Contains("[20]"));
  // A model with a second block: its tensors are missing from the file.
  ParamLayout deeper = layout;
  ParamGroup h1 = deeper.groups[1];
  for (auto& t : h1.tensors) t.name.replace(0, 3, "h.1");
  deeper.groups.insert(deeper.groups.begin() + 2, h1);
  CHECK_THROWS_WITH(load_gpt2_safetensors(path, deeper, out.data(), 6),
                    Catch::Contains("h.1.ln_1.weight") && Catch::Contains("missing") && Catch::Contains("[4]"));
  // A vocabulary larger than the padded table cannot be exported.
  CHECK_THROWS_WITH(save_gpt2_safetensors(dir.file("x.safetensors"), layout, flat.data(), 9),
                    Catch::Contains("wte.weight") && Catch::Contains("9"));
}

TEST_CASE("GPT-2 config.json for transformers", "[safetensors][gpt2]") {
  TempDir dir;
  const std::string out = (dir.path / "export" / "final").string();
  write_gpt2_config_json(out, 12, 12, 768, 50257, 1024);
  std::ifstream in(out + "/config.json");
  REQUIRE(in.good());
  auto j = nlohmann::json::parse(in);
  CHECK(j["model_type"] == "gpt2");
  CHECK(j["architectures"] == nlohmann::json::array({"GPT2LMHeadModel"}));
  CHECK(j["n_layer"] == 12);
  CHECK(j["n_head"] == 12);
  CHECK(j["n_embd"] == 768);
  CHECK(j["vocab_size"] == 50257);
  CHECK(j["n_positions"] == 1024);
  CHECK(j["layer_norm_epsilon"] == 1e-5);
  CHECK(j["activation_function"] == "gelu_new");
  CHECK(j["tie_word_embeddings"] == true);
}

TEST_CASE("GPT-2 loading refuses non-finite weights, naming the tensor and element", "[safetensors][gpt2]") {
  TempDir dir;
  ParamLayout layout = tiny_layout();
  std::vector<float> out(layout.total);
  const TensorSpec* ln_f = layout.find("ln_f.weight");
  for (float bad : {NAN, INFINITY, -INFINITY}) {
    std::vector<float> flat = ramp(layout.total);
    flat[ln_f->offset + 2] = bad;
    const std::string path = dir.file("bad.safetensors");
    save_gpt2_safetensors(path, layout, flat.data(), 6);
    CHECK_THROWS_WITH(load_gpt2_safetensors(path, layout, out.data(), 6),
                      Catch::Contains("bad.safetensors: tensor ln_f.weight element 2 is") &&
                          Catch::Contains("(expected finite weights)"));
  }
}
