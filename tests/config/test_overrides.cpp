// --set KEY=VALUE (JSON when it parses, else a string), applied before judging; --model, --data
// and --steps.
#include <unistd.h>

#include <filesystem>
#include <fstream>

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
                   sets({"zero_optimization.stage=3", "zero_optimization.offload_param.device=cpu",
                         "training.steps=200", "optimizer.type=adam", "bf16.enabled=true"}));
  CHECK(c.zero.stage == 3);
  CHECK(c.zero.offload_param.device == zt::OffloadDevice::Cpu);
  CHECK(c.training.steps == 200);
  CHECK(c.optimizer.type == "Adam");
  CHECK(c.bf16.enabled);
  CHECK(error_of(with({}), sets({"zero_optimization.stage=4"})) ==
        "--set zero_optimization.stage=4: zero_optimization.stage: 4 is out of range (expected 0..3)");
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
  CHECK(c.data.train == std::vector<std::string>{"/data/tokens.bin"});
  CHECK(c.data.val.empty());  // the shipped validation split goes only with the shipped corpus
  CHECK(c.model.preset == "gpt2-tiny");
  CHECK(c.model.shape.d_model == 256);
  // --set comes after them.
  o.overrides = {"training.steps=44", "model.n_layer=1"};
  auto d = resolve(with({}), o);
  CHECK(d.training.steps == 44);
  CHECK(d.model.shape.n_layer == 1);
  CHECK(d.model.preset == "custom");
}

TEST_CASE("a message about a value names where the value came from: the option or the file") {
  const json file = with({{"zero_optimization", {{"stage", 2}}}});
  // The bad value came from --set: the option is named, not the file.
  CHECK(error_of(file, sets({"zero_optimization.stage=5"})) ==
        "--set zero_optimization.stage=5: zero_optimization.stage: 5 is out of range (expected 0..3)");
  CHECK(error_of(file, sets({"zero_optimization.stagee=1"})) ==
        "--set zero_optimization.stagee=1: zero_optimization.stagee: unknown key; did you mean stage?");
  CHECK(error_of(file, sets({"optimizer.type=Lion"})).rfind("--set optimizer.type=Lion: optimizer.type: ", 0) == 0);
  // The bad value is in the file; an unrelated --set does not take the blame.
  const json bad_file = with({{"zero_optimization", {{"stage", 4}}}});
  CHECK(error_of(bad_file, sets({"zero_optimization.overlap_comm=true", "training.steps=3"})) ==
        "test.json: zero_optimization.stage: 4 is out of range (expected 0..3)");
  // A block given whole on the command line is the origin of every key inside it.
  CHECK(error_of(file, sets({"zero_optimization={\"stage\": 7}"})) ==
        "--set zero_optimization={\"stage\": 7}: zero_optimization.stage: 7 is out of range (expected 0..3)");
  // The last option that set a key is the one named.
  CHECK(error_of(file, sets({"zero_optimization.stage=9", "zero_optimization={\"stage\": 8}"}))
            .rfind("--set zero_optimization={\"stage\": 8}: zero_optimization.stage: 8 ", 0) == 0);
  CHECK(error_of(file, sets({"zero_optimization={\"stage\": 8}", "zero_optimization.stage=6"}))
            .rfind("--set zero_optimization.stage=6: zero_optimization.stage: 6 ", 0) == 0);
  // A value given under an alias keeps its origin when it is read under the canonical name.
  CHECK(error_of(with({{"zero_optimization", {{"stage", 3}}}}), sets({"zero_optimization.max_live_parameters=-1"}))
            .rfind("--set zero_optimization.max_live_parameters=-1: zero_optimization.stage3_max_live_parameters: ",
                   0) == 0);
  // Array elements below an overridden key.
  CHECK(error_of(with({}), sets({"comms_logger.prof_ops=[\"all_reduce\", 3]"}))
            .rfind("--set comms_logger.prof_ops=[\"all_reduce\", 3]: comms_logger.prof_ops[1]: ", 0) == 0);
  // The batch equation involves three keys: the options that set any of them are named, with the file.
  CHECK(
      error_of(with({{"train_batch_size", 8}, {"train_micro_batch_size_per_gpu", 2}}),
               sets({"gradient_accumulation_steps=3"}))
          .rfind("--set gradient_accumulation_steps=3 (with test.json): train_batch_size 8 != micro 2 * accumulation 3 "
                 "* world 1",
                 0) == 0);
  CHECK(error_of(
            with({{"train_batch_size", 8}, {"train_micro_batch_size_per_gpu", 2}, {"gradient_accumulation_steps", 3}}),
            sets({"training.steps=3"}))
            .rfind("test.json: train_batch_size 8 != micro 2", 0) == 0);
  // --steps and --data name themselves too.
  auto o = world(1);
  o.steps = -1;
  CHECK(error_of(with({}), o) == "--steps -1: training.steps: -1 is out of range (expected >= 1)");
  o.steps = std::nullopt;
  const auto model_file =
      std::filesystem::temp_directory_path() / ("zt_test_model_" + std::to_string(::getpid()) + ".json");
  std::ofstream(model_file) << R"({"preset": "toy", "n_layers": 2})";
  o.model = model_file.string();
  CHECK(error_of(with({}), o) ==
        "--model " + model_file.string() + ": model.n_layers: unknown key; did you mean n_layer?");
  std::filesystem::remove(model_file);
  // A block created by --set under a misspelt name.
  CHECK(error_of(file, sets({"zero_optimisation.stage=3"})) ==
        "--set zero_optimisation.stage=3: zero_optimisation: unknown key; did you mean zero_optimization?");
}

TEST_CASE("ValueOrigins: longest recorded path that contains the key") {
  ValueOrigins origins;
  origins.set("a", "A");
  origins.set("a.b", "B");
  CHECK(*origins.find("a") == "A");
  CHECK(*origins.find("a.c") == "A");
  CHECK(*origins.find("a.b") == "B");
  CHECK(*origins.find("a.b.c") == "B");
  CHECK(*origins.find("a.b[2]") == "B");
  CHECK(*origins.find("a.bc") == "A");
  CHECK(origins.find("ab") == nullptr);
  CHECK(origins.find("x.a") == nullptr);
  origins.set("a", "C");  // replaces everything below it
  CHECK(*origins.find("a.b") == "C");
  origins.set("z.old", "D");
  origins.alias("z.old", "z.new");
  CHECK(*origins.find("z.new") == "D");
  CHECK(*origins.find("z.old") == "D");
}
