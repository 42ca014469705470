// The lora block (PEFT's LoraConfig keys) and training.freeze: defaults, PEFT's spellings, the
// family's target modules, the patterns checked against the model's names, and what the resolved
// config prints reads back the same.
#include "config/recorded_run.hpp"
#include "config_test_support.hpp"

using namespace zt;
using namespace zt::config;
using namespace zt::config::testing;

namespace {

const std::string kLlama = std::string(ZT_SOURCE_DIR) + "/tests/fixtures/lora/llama3/base";

// The config of the given keys and a micro-batch, resolved; the error that resolving it throws.
json with(json keys) {
  keys["train_micro_batch_size_per_gpu"] = 1;
  return keys;
}
Config res(const json& keys) { return resolve(with(keys)); }
std::string err(const json& keys) { return error_of(with(keys)); }

}  // namespace

TEST_CASE("no lora block: no adapters; a block turns them on with PEFT's defaults") {
  CHECK_FALSE(res(json::object()).lora.enabled);
  const Config c = res({{"lora", json::object()}});
  CHECK(c.lora.enabled);
  CHECK(c.lora.r == 8);
  CHECK(c.lora.alpha == 8.0);
  CHECK(c.lora.dropout == 0.0);
  CHECK(c.lora.target_modules == std::vector<std::string>{"c_attn"});  // GPT-2's default
  CHECK_FALSE(c.lora.use_rslora);
  CHECK_FALSE(res({{"lora", {{"enabled", false}, {"r", 4}}}}).lora.enabled);
  const Config llama = res({{"model", {{"path", kLlama}}}, {"lora", {{"r", 16}}}});
  CHECK(llama.lora.target_modules == std::vector<std::string>{"q_proj", "v_proj"});
  // The adapters train on the model's own weights.
  CHECK(llama.training.init_from == kLlama);
  const TrainedParts parts = trained_parts(llama);
  CHECK(parts.lora.r == 16);
  CHECK(parts.lora.scale() == 0.5);
}

TEST_CASE("lora keys: PEFT's spellings, target_modules as a list or one name, ranges checked by path") {
  const Config c = res({{"model", {{"path", kLlama}}},
                            {"lora",
                             {{"r", 4},
                              {"lora_alpha", 16},
                              {"lora_dropout", 0.05},
                              {"target_modules", "all-linear"},
                              {"use_rslora", true}}}});
  CHECK(c.lora.alpha == 16);
  CHECK(c.lora.dropout == 0.05);
  CHECK(c.lora.target_modules == std::vector<std::string>{"all-linear"});
  CHECK(trained_parts(c).lora.scale() == 8.0);  // alpha / sqrt(r)
  CHECK_THAT(err({{"model", {{"path", kLlama}}}, {"lora", {{"target_modules", {"q_proj", "c_attn"}}}}}),
             Catch::Contains("lora.target_modules[1]: \"c_attn\" is not a projection of a llama block"));
  CHECK_THAT(err({{"lora", {{"dropout", 1.0}}}}), Catch::Contains("lora.dropout"));
  CHECK_THAT(err({{"lora", {{"r", 0}}}}), Catch::Contains("lora.r"));
  CHECK_THAT(err({{"lora", {{"rank", 4}}}}), Catch::Contains("lora.rank"));
}

TEST_CASE("training.freeze: Hugging Face name patterns checked against the model's names") {
  const Config c = res({{"training", {{"freeze", {"wte", "h.{0-1}.attn"}}}}});
  CHECK(c.training.freeze == std::vector<std::string>{"wte", "h.{0-1}.attn"});
  CHECK(res({{"training", {{"freeze", "wpe"}}}}).training.freeze == std::vector<std::string>{"wpe"});
  CHECK_THAT(err({{"training", {{"freeze", {"wte", "model.embed_tokens"}}}}}),
             Catch::Contains("test.json: training.freeze[1]: \"model.embed_tokens\" matches no parameter"));
  CHECK_THAT(err({{"training", {{"freeze", {"h.{1-0}"}}}}}), Catch::Contains("training.freeze[0]") &&
                                                                   Catch::Contains("is not a range of integers"));
  CHECK_THAT(err({{"training", {{"freeze", {"*"}}}}}),
             Catch::Contains("training.freeze: every parameter is frozen: nothing would train"));
  CHECK_THAT(err({{"training", {{"freeze", {3}}}}}), Catch::Contains("training.freeze[0]: 3 is not a string"));
}

TEST_CASE("the resolved lora block and training.freeze read back the same") {
  const Config c = res({{"model", {{"path", kLlama}}},
                            {"lora", {{"r", 4}, {"alpha", 6.5}, {"target_modules", {"k_proj", "down_proj"}}}},
                            {"training", {{"freeze", {"model.layers.0"}}}}});
  const json printed = to_json(c);
  const Config again = resolve(printed);
  CHECK(to_json(again) == printed);
  CHECK(trained_parts(again) == trained_parts(c));
  CHECK(read_recorded_run(printed).parts == trained_parts(c));
  CHECK(read_recorded_run(to_json(res(json::object()))).parts == TrainedParts{});
}
