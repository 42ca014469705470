// A config's errors come all at once, one line each with its JSON path, so that one edit fixes
// them; an error that only follows from another (a value replaced by its default) is not shown.
#include "config_test_support.hpp"

using namespace zt::config;
using namespace zt::config::testing;

namespace {

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

TEST_CASE("every error of a config is reported, each with its path; the fp16+bf16 conflict hides none") {
  const json raw = with({{"fp16", {{"enabled", true}}},
                         {"bf16", {{"enabled", true}}},
                         {"zero_optimization", {{"stage", 7}, {"reduce_bucket_sise", 5}}},
                         {"optimizer", {{"type", "AdamW"}, {"params", {{"lr", -1}, {"betas", {0.9, 2}}}}}},
                         {"training", {{"steps", 0}, {"seed", "x"}}},
                         {"gradient_acumulation_steps", 4},
                         {"steps_per_print", 1.5}});
  CHECK(lines(error_of(raw)) == std::vector<std::string>{
                                    "test.json: training.steps: 0 is out of range (expected >= 1)",
                                    "test.json: training.seed: \"x\" is not a number (expected an integer >= 0)",
                                    "test.json: steps_per_print: 1.5 is not an integer (expected an integer >= 0)",
                                    "test.json: fp16.enabled: true together with bf16.enabled true (expected at most "
                                    "one of fp16 and bf16)",
                                    "test.json: optimizer.params.lr: -1 is out of range (expected > 0)",
                                    "test.json: optimizer.params.betas[1]: 2 is out of range (expected in [0, 1))",
                                    "test.json: zero_optimization.stage: 7 is out of range (expected 0..3)",
                                    "test.json: zero_optimization.reduce_bucket_sise: unknown key; did you mean "
                                    "reduce_bucket_size?",
                                    "test.json: gradient_acumulation_steps: unknown key; did you mean "
                                    "gradient_accumulation_steps?",
                                });
}

TEST_CASE("a rule broken only by a value replaced after its error is not reported") {
  // The stage is wrong; offload "needs stage 1, 2 or 3" would only be about the default stage 0.
  CHECK(error_of(with({{"zero_optimization", {{"stage", "two"}, {"offload_optimizer", {{"device", "cpu"}}}}}})) ==
        "test.json: zero_optimization.stage: \"two\" is not a number (expected an integer 0..3)");
  // The model's size is wrong; data.seq_len is not judged against the default model.
  CHECK(error_of(with({{"model", {{"max_seq_len", "1024"}}}, {"data", {{"seq_len", 1024}}}})) ==
        "test.json: model.max_seq_len: \"1024\" is not a number (expected an integer 1..1073741824)");
  // training.lr is wrong; whether the optimizer's lr overrules it is not asked.
  CHECK(error_of(
            with({{"training", {{"lr", "high"}}}, {"optimizer", {{"type", "AdamW"}, {"params", {{"lr", 1e-3}}}}}})) ==
        "test.json: training.lr: \"high\" is not a number (expected a number > 0)");
  // A block of another tool's that is not an object is reported with the unknown keys after it.
  CHECK(lines(error_of(with({{"flops_profiler", true}, {"zero_optimisation", json::object()}}))) ==
        std::vector<std::string>{
            "test.json: flops_profiler: true is not an object (expected a JSON object {...})",
            "test.json: zero_optimisation: unknown key; did you mean zero_optimization?"});
  // A broken rule in one block does not hide a value error in another.
  CHECK(
      lines(error_of(with({{"training", {{"save_interval", 10}}}, {"aio", {{"queue_depth", 0}}}}))) ==
      std::vector<std::string>{
          "test.json: training.save_interval: 10 needs training.checkpoint_dir (expected a directory for checkpoints)",
          "test.json: aio.queue_depth: 0 is out of range (expected 1..1024)"});
}

TEST_CASE("errors from --set are reported with the file's, each against its origin") {
  ResolveOptions o = world(1);
  o.overrides = {"zero_optimization.stage=9", "traning.steps=5"};
  CHECK(lines(error_of(with({{"bf16", {{"enabled", "yes"}}}}), o)) ==
        std::vector<std::string>{
            "test.json: bf16.enabled: \"yes\" is not a boolean (expected true, false or \"auto\")",
            "--set zero_optimization.stage=9: zero_optimization.stage: 9 is out of range (expected 0..3)",
            "--set traning.steps=5: traning: unknown key; did you mean training?"});
}

TEST_CASE("at most 20 errors are shown, then how many more there are") {
  json zero = {{"stage", 1}};
  for (int i = 0; i < 25; ++i) zero["unknown_setting_" + std::to_string(i)] = i;
  const auto shown = lines(error_of(with({{"zero_optimization", zero}})));
  REQUIRE(shown.size() == 21);
  for (size_t i = 0; i < 20; ++i) CHECK(shown[i].rfind("test.json: zero_optimization.unknown_setting_", 0) == 0);
  CHECK(shown[20] == "5 more errors not shown (fix these first)");
}
