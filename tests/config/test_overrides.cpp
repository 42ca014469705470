// --set KEY=VALUE (JSON when it parses, else a string), applied before judging; --model, --data
// and --steps.
#include "config/overrides.hpp"
#include "config_test_support.hpp"

using namespace zt::config;
using namespace zt::config::testing;

namespace {
ResolveOptions sets(std::vector<std::string> overrides, int w = 1) {
  auto o = world(w);
  o.overrides = std::move(overrides);
  return o;
}
}  // namespace

TEST_CASE("apply_override parses the value as JSON, else keeps it as a string") {
  json raw = json::object();
  apply_override(raw, "a.b.c=3");
  apply_override(raw, "flag=true");
  apply_override(raw, "name=AdamW");
  apply_override(raw, "list=[0.9, 0.95]");
  apply_override(raw, "quoted=\"auto\"");
  apply_override(raw, "path=/tmp/x.bin");
  apply_override(raw, "empty=");
  apply_override(raw, "big=5e8");
  CHECK(raw["a"]["b"]["c"] == 3);
  CHECK(raw["flag"] == true);
  CHECK(raw["name"] == "AdamW");
  CHECK(raw["list"] == json({0.9, 0.95}));
  CHECK(raw["quoted"] == "auto");
  CHECK(raw["path"] == "/tmp/x.bin");
  CHECK(raw["empty"] == "");
  CHECK(raw["big"] == 5e8);
}

TEST_CASE("apply_override rejects malformed assignments") {
  json raw = {{"zero_optimization", 3}};
  CHECK_THROWS_WITH(apply_override(raw, "noequals"), Catch::Contains("--set noequals: expected KEY=VALUE"));
  CHECK_THROWS_WITH(apply_override(raw, "=3"), Catch::Contains("expected KEY=VALUE"));
  CHECK_THROWS_WITH(apply_override(raw, "a..b=1"), Catch::Contains("empty component"));
  CHECK_THROWS_WITH(apply_override(raw, "zero_optimization.stage=1"),
                    Catch::Contains("zero_optimization is 3 in the config, not an object"));
}

TEST_CASE("overrides obey the same rules as the file") {
  auto c = resolve(with({{"zero_optimization", {{"stage", 1}}}}),
                   sets({"zero_optimization.stage=3", "zero_optimization.offload_param.device=cpu", "training.steps=200",
                         "optimizer.type=adam", "bf16.enabled=true"}));
  CHECK(c.zero.stage == 3);
  CHECK(c.zero.offload_param.device == "cpu");
  CHECK(c.training.steps == 200);
  CHECK(c.optimizer.type == "Adam");
  CHECK(c.bf16.enabled);
  CHECK(error_of(with({}), sets({"zero_optimization.stage=4"})) ==
        "test.json: zero_optimization.stage: 4 is out of range (expected 0..3)");
  CHECK(error_of(with({}), sets({"zero_optimization.reduce_bucket_sise=5"})).find("did you mean reduce_bucket_size?") !=
        std::string::npos);
  // Later overrides win; "auto" can be set too.
  auto d = resolve(with({}), sets({"training.micro_batch_size=2", "training.micro_batch_size=3",
                                   "train_micro_batch_size_per_gpu=\"auto\""}));
  CHECK(d.train_micro_batch_size_per_gpu == 3);
  CHECK(resolve(with({}), sets({"train_micro_batch_size_per_gpu=auto"})).train_micro_batch_size_per_gpu == 4);
}

TEST_CASE("--steps, --data and --model") {
  auto o = world(1);
  o.steps = 33;
  o.data = "/data/tokens.bin";
  o.model = "gpt2-tiny";
  auto c = resolve(with({{"model", {{"preset", "toy"}}}, {"training", {{"steps", 5}}}}), o);
  CHECK(c.training.steps == 33);
  CHECK(c.data.train == "/data/tokens.bin");
  CHECK(c.data.val.empty());  // the shipped validation split goes only with the shipped corpus
  CHECK(c.model.preset == "gpt2-tiny");
  CHECK(c.model.d_model == 256);
  // --set comes after them.
  o.overrides = {"training.steps=44", "model.n_layer=1"};
  auto d = resolve(with({}), o);
  CHECK(d.training.steps == 44);
  CHECK(d.model.n_layer == 1);
  CHECK(d.model.preset == "custom");
}
