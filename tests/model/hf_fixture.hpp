#pragma once
// The llama-family fixtures of tests/fixtures/hf (written by scripts/make_hf_fixtures.py with
// transformers' own models): the architecture in __metadata__ as zerotrain's model keys.
#include <nlohmann/json.hpp>
#include <string>

#include "model/gpt_shape.hpp"
#include "torch_fixture.hpp"

namespace zt::test {

inline std::string hf_fixture_path(const std::string& name) {
  return std::string(ZT_SOURCE_DIR) + "/tests/fixtures/hf/" + name + ".safetensors";
}

// The fixtures: Llama 3 (GQA, llama3 rope scaling, tied), Qwen2 (q/k/v bias, MQA, untied), Qwen3
// (q/k norms, head_dim 24 x 4 heads != d_model 64, o bias), a Llama with every bias (untied) and
// a Mistral.
inline const char* const kHfFixtures[] = {"llama3", "qwen2", "qwen3", "llama_bias", "mistral"};

inline GptShape hf_fixture_shape(const TorchFixture& fx) {
  GptShape s(fx.meta_int("n_layer"), fx.meta_int("n_head"), fx.meta_int("d_model"), fx.meta_int("vocab_size"),
             fx.meta_int("max_seq_len"));
  const auto type = kModelTypeNames.find(fx.metadata.at("model_type"));
  if (!type) fail("fixture model_type {} is unknown", fx.metadata.at("model_type"));
  s.model_type = *type;
  s.n_kv_head = fx.meta_int("n_kv_head");
  s.head_dim = fx.meta_int("head_dim");
  s.d_ff = fx.meta_int("d_ff");
  s.norm_eps = fx.meta_double("norm_eps");
  s.rope_theta = fx.meta_double("rope_theta");
  const auto rope = nlohmann::json::parse(fx.metadata.at("rope_scaling"));
  if (!rope.is_null() && rope.at("rope_type") == "llama3")
    s.rope_scaling = {RopeType::Llama3, rope.at("factor").get<double>(), rope.at("low_freq_factor").get<double>(),
                      rope.at("high_freq_factor").get<double>(),
                      rope.at("original_max_position_embeddings").get<int>()};
  auto flag = [&](const char* key) { return fx.metadata.at(key) == "true"; };
  s.attention_bias = flag("attention_bias");
  s.mlp_bias = flag("mlp_bias");
  s.tied_head = flag("tie_word_embeddings");
  if (fx.metadata.count("sliding_window")) s.sliding_window = fx.meta_int("sliding_window");
  return s;
}

}  // namespace zt::test
