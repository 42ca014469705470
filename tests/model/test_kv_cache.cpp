// Generation's forward against a KV cache: the logits of each position, whether it comes with the
// prompt or one token at a time after it, are those of one forward over the whole sequence
// (GPT-2's learned positions and the llama family's rotary positions at an offset, grouped-query
// attention, q/k norms, rope scaling, sliding windows shorter than the sequence, whose layers keep
// only their window's keys and values in a ring); the cache's bounds are checked.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/rng.hpp"
#include "hf_fixture.hpp"
#include "model/gpt.hpp"
#include "packed_rows.hpp"

using namespace zt;
using namespace zt::test;

namespace {

// [L, Vp] logits of one forward over tokens[0, L).
std::vector<float> full_logits(Gpt& model, ParamHooks& params, const std::vector<int32_t>& tokens) {
  const int L = int(tokens.size());
  model.forward(tokens.data(), nullptr, 1, L, params);
  return {model.logits(), model.logits() + size_t(L) * model.padded_vocab()};
}

void check_rows_match(const float* got, const float* want, int V) {
  double num = 0, den = 0;
  for (int v = 0; v < V; v++) {
    num += (double(got[v]) - want[v]) * (double(got[v]) - want[v]);
    den += double(want[v]) * want[v];
  }
  CHECK(std::sqrt(num / den) <= 1e-5);
  CHECK(std::max_element(got, got + V) - got == std::max_element(want, want + V) - want);
}

void check_cached_equals_full(const GptShape& shape) {
  const int L = 12, prompt = 5, Vp = shape.padded_vocab(), V = shape.vocab_size;
  Gpt full(shape, 1, L);
  ResidentParams params(full.layout());
  full.init_params(params.params.data(), 0, full.layout().total, 11);
  std::vector<int32_t> tokens(L);
  Rng rng(5);
  for (auto& t : tokens) t = int32_t(rng.below(uint64_t(V)));
  const std::vector<float> want = full_logits(full, params, tokens);

  Gpt model(shape, 1, L, /*recompute=*/true);  // generation keeps one block's activations
  KvCache cache(shape, 1, L);
  model.forward_cached(tokens.data(), 1, prompt, cache, params);
  REQUIRE(cache.length() == prompt);
  for (int t = 0; t < prompt; t++) check_rows_match(model.logits() + size_t(t) * Vp, want.data() + size_t(t) * Vp, V);
  for (int t = prompt; t < L; t++) {
    model.forward_cached(&tokens[size_t(t)], 1, 1, cache, params);
    INFO("position " << t);
    check_rows_match(model.logits(), want.data() + size_t(t) * Vp, V);
  }
  REQUIRE(cache.length() == L);
  const int32_t one = 0;
  REQUIRE_THROWS_WITH(model.forward_cached(&one, 1, 1, cache, params), Catch::Contains("reach past the cache"));
  cache.clear();
  model.forward_cached(tokens.data(), 1, L, cache, params);  // the whole sequence at once, again
  for (int t = 0; t < L; t++) check_rows_match(model.logits() + size_t(t) * Vp, want.data() + size_t(t) * Vp, V);
  // Again in chunks of a few tokens, which a sliding layer's ring wraps inside.
  cache.clear();
  for (int at = 0; int chunk : {2, 3, 3, 4}) {
    model.forward_cached(&tokens[size_t(at)], 1, chunk, cache, params);
    for (int t = 0; t < chunk; t++) {
      INFO("position " << at + t << " in a chunk of " << chunk);
      check_rows_match(model.logits() + size_t(t) * Vp, want.data() + size_t(at + t) * Vp, V);
    }
    at += chunk;
  }
}

}  // namespace

TEST_CASE("forward against a KV cache gives the full forward's logits: GPT-2", "[model][kv_cache]") {
  check_cached_equals_full(*gpt_preset("toy"));
}

TEST_CASE("forward against a KV cache gives the full forward's logits: the llama family", "[model][kv_cache]") {
  for (const char* preset : {"llama-tiny", "qwen3-tiny"}) {
    INFO(preset);
    check_cached_equals_full(*gpt_preset(preset));
  }
  for (const char* fixture : {"llama3", "qwen2"}) {  // llama3 rope scaling; multi-query attention, untied head
    INFO(fixture);
    check_cached_equals_full(hf_fixture_shape(TorchFixture(hf_fixture_path(fixture))));
  }
}

TEST_CASE("forward against a KV cache gives the full forward's logits: sliding windows", "[model][kv_cache][window]") {
  GptShape mistral = *gpt_preset("llama-tiny");  // every layer slides over 3 keys
  mistral.model_type = ModelType::Mistral;
  mistral.sliding_window = 3;
  for (const GptShape& shape : {mistral, model_test_shape("qwen3-tiny+window")}) {
    INFO(describe(shape) << ", window " << shape.sliding_window);
    check_cached_equals_full(shape);
    // The window is in force: without it the same weights give other logits.
    GptShape full = shape;
    full.sliding_window = 0;
    full.layer_types.clear();
    Gpt a(shape, 1, 12), b(full, 1, 12);
    ResidentParams params(a.layout());
    a.init_params(params.params.data(), 0, a.layout().total, 11);
    std::vector<int32_t> tokens(12);
    Rng rng(6);
    for (auto& t : tokens) t = int32_t(rng.below(uint64_t(shape.vocab_size)));
    CHECK(full_logits(a, params, tokens) != full_logits(b, params, tokens));
  }
}

TEST_CASE("a sliding layer's KV cache holds its window's positions, a full layer's all of them",
          "[model][kv_cache][window]") {
  GptShape shape = model_test_shape("qwen3-tiny+window");
  shape.n_layer = 3;
  shape.sliding_window = 3;
  shape.layer_types = {LayerAttention::Sliding, LayerAttention::Full, LayerAttention::Sliding};
  const size_t row = size_t(shape.kv_heads()) * size_t(shape.head_size());  // one position's k (or v), one sequence
  KvCache cache(shape, 2, 12);
  CHECK(cache.rows(0) == 3);
  CHECK(cache.rows(1) == 12);
  CHECK(cache.rows(2) == 3);
  CHECK(KvCache::bytes(shape, 2, 12, DType::F32) == 2 * 2 * (3 + 12 + 3) * row * sizeof(float));
  CHECK(KvCache::bytes(shape, 1, 12, DType::BF16) == 2 * (3 + 12 + 3) * row * 2);
  // A cache shorter than the window: every position, in every layer.
  const KvCache short_cache(shape, 1, 2);
  CHECK(short_cache.rows(0) == 2);
  CHECK(KvCache::bytes(shape, 1, 2, DType::F32) == 2 * 3 * 2 * row * sizeof(float));
  // The layers' k and v do not overlap, in order.
  CHECK(static_cast<char*>(cache.values(0)) - static_cast<char*>(cache.keys(0)) == ptrdiff_t(2 * 3 * row * 4));
  CHECK(static_cast<char*>(cache.keys(1)) - static_cast<char*>(cache.values(0)) == ptrdiff_t(2 * 3 * row * 4));
  CHECK(static_cast<char*>(cache.keys(2)) - static_cast<char*>(cache.values(1)) == ptrdiff_t(2 * 12 * row * 4));
}

TEST_CASE("a KV cache is refused beyond the model's positions or with another batch", "[model][kv_cache]") {
  const GptShape shape = *gpt_preset("llama-tiny");
  REQUIRE_THROWS_WITH(KvCache(shape, 1, shape.max_seq_len + 1), Catch::Contains("model.max_seq_len"));
  Gpt model(shape, 2, 8);
  ResidentParams params(model.layout());
  KvCache cache(shape, 1, 8);
  const std::vector<int32_t> tokens(4, 1);
  REQUIRE_THROWS_WITH(model.forward_cached(tokens.data(), 2, 2, cache, params), Catch::Contains("batch B=2"));
  KvCache long_cache(shape, 1, 16);  // room for 16 positions; the model was built for 8
  long_cache.advance(6);
  REQUIRE_THROWS_WITH(model.forward_cached(tokens.data(), 1, 4, long_cache, params),
                      Catch::Contains("or the model's 8"));
}

TEST_CASE("forward against a KV cache gives the full forward's logits: Gemma", "[model][kv_cache][gemma]") {
  // Gemma 2: even layers sliding over 3 keys, soft-capped attention and logits, another scale;
  // Gemma 3 text: q/k norms, a rotary base of its own on the sliding layers.
  GptShape gemma2 = *gpt_preset("llama-tiny");
  gemma2.model_type = ModelType::Gemma2;
  gemma2.n_layer = 3;
  gemma2.tied_head = true;
  gemma2.sliding_window = 3;
  gemma2.layer_types = {LayerAttention::Sliding, LayerAttention::Full, LayerAttention::Sliding};
  gemma2.query_pre_attn_scalar = 8;
  gemma2.attn_logit_softcapping = 1.5;
  gemma2.final_logit_softcapping = 2.0;
  GptShape gemma3 = gemma2;
  gemma3.model_type = ModelType::Gemma3Text;
  gemma3.attn_logit_softcapping = gemma3.final_logit_softcapping = 0.0;
  gemma3.rope_theta = 1000000.0;
  gemma3.rope_local_base_freq = 10.0;
  for (const GptShape& shape : {gemma2, gemma3}) {
    INFO(describe(shape));
    check_cached_equals_full(shape);
  }
}
