// training.lr, max_grad_norm, micro_batch_size, gradient_accumulation_steps, warmup_steps,
// warmup_ratio and lr_scheduler_type stand for DeepSpeed keys: given while the DeepSpeed key says
// otherwise, they are an error naming both; and where each of lr, schedule, batch and precision
// came from is written down for the start line.
#include <algorithm>

#include "config_test_support.hpp"

using namespace zt::config;
using namespace zt::config::testing;

namespace {

ResolveOptions sets(std::vector<std::string> overrides) {
  ResolveOptions o = world(1);
  o.overrides = std::move(overrides);
  return o;
}

const json kOptimizerLr = {{"type", "AdamW"}, {"params", {{"lr", 1e-3}}}};

}  // namespace

TEST_CASE("a training key that loses to an explicit DeepSpeed key is an error naming both") {
  CHECK(error_of(with({{"optimizer", kOptimizerLr}}), sets({"training.lr=5e-4"})) ==
        "--set training.lr=5e-4: training.lr: 0.0005 is not used: optimizer.params.lr is 0.001 (config) (expected "
        "only one of them: set optimizer.params.lr to \"auto\" to use training.lr, or leave training.lr out)");
  CHECK(error_of(with({{"gradient_clipping", 1.0}}), sets({"training.max_grad_norm=0.5"})) ==
        "--set training.max_grad_norm=0.5: training.max_grad_norm: 0.5 is not used: gradient_clipping is 1 (config) "
        "(expected only one of them: set gradient_clipping to \"auto\" to use training.max_grad_norm, or leave "
        "training.max_grad_norm out)");
  CHECK(error_of({{"train_micro_batch_size_per_gpu", 2}}, sets({"training.micro_batch_size=8"})) ==
        "--set training.micro_batch_size=8: training.micro_batch_size: 8 is not used: train_micro_batch_size_per_gpu "
        "is 2 (config) (expected only one of them: set train_micro_batch_size_per_gpu to \"auto\" to use "
        "training.micro_batch_size, or leave training.micro_batch_size out)");
  // Derived by DeepSpeed's batch arithmetic.
  CHECK(error_of({{"train_batch_size", 16}, {"train_micro_batch_size_per_gpu", 4}},
                 sets({"training.gradient_accumulation_steps=2"})) ==
        "--set training.gradient_accumulation_steps=2: training.gradient_accumulation_steps: 2 is not used: "
        "gradient_accumulation_steps is 4 (derived from train_batch_size, config) (expected only one of them: set "
        "gradient_accumulation_steps to \"auto\" to use training.gradient_accumulation_steps, or leave "
        "training.gradient_accumulation_steps out)");
  CHECK(error_of(with({}), sets({"training.gradient_accumulation_steps=2"})).find(
            "gradient_accumulation_steps is 1 (not given: 1, as DeepSpeed takes it)") != std::string::npos);
  // The schedule decides the lr: its peak, or its own keys.
  CHECK(error_of(with({{"scheduler", {{"type", "WarmupLR"}, {"params", {{"warmup_max_lr", 2e-3}}}}},
                       {"training", {{"lr", 5e-4}}}}))
            .rfind("test.json: training.lr: 0.0005 is not used: scheduler.params.warmup_max_lr is 0.002 (config)", 0) ==
        0);
  CHECK(error_of(
            with({{"scheduler", {{"type", "OneCycle"}, {"params", {{"cycle_min_lr", 1e-4}, {"cycle_max_lr", 1e-3}}}}},
                  {"training", {{"lr", 5e-4}}}})) ==
        "test.json: training.lr: 0.0005 is not used: scheduler.params.cycle_max_lr is 0.001 (config) (expected only "
        "one of them: leave training.lr out, or change scheduler.params.cycle_max_lr)");
  // Warmup.
  CHECK(error_of(with({{"scheduler", {{"type", "WarmupLR"}, {"params", {{"warmup_num_steps", 100}}}}}}),
                 sets({"training.warmup_steps=10"}))
            .rfind("--set training.warmup_steps=10: training.warmup_steps: 10 is not used: "
                   "scheduler.params.warmup_num_steps is 100 (config)", 0) == 0);
  CHECK(error_of(with({{"training", {{"lr_scheduler_type", "constant"}, {"warmup_ratio", 0.1}}}})) ==
        "test.json: training.warmup_ratio: 0.1 is not used: training.lr_scheduler_type is constant (config; no "
        "scheduler block) (expected only one of them: leave training.warmup_ratio out, or change "
        "training.lr_scheduler_type)");
  CHECK(error_of(with({{"scheduler", {{"type", "LRRangeTest"}}}, {"training", {{"warmup_steps", 5}}}}))
            .rfind("test.json: training.warmup_steps: 5 is not used: scheduler.type is LRRangeTest (config, no warmup)",
                   0) == 0);
  CHECK(error_of(with({{"scheduler", {{"type", "WarmupLR"}}}, {"training", {{"lr_scheduler_type", "linear"}}}})) ==
        "test.json: training.lr_scheduler_type: linear is not used: scheduler.type is WarmupLR (config) (expected "
        "only one of them: leave training.lr_scheduler_type out, or change scheduler.type)");
  // All of them at once.
  const std::string all =
      error_of({{"train_micro_batch_size_per_gpu", 2}, {"gradient_clipping", 0}, {"optimizer", kOptimizerLr}},
               sets({"training.lr=5e-4", "training.max_grad_norm=2", "training.micro_batch_size=3"}));
  CHECK(std::count(all.begin(), all.end(), '\n') == 2);
}

TEST_CASE("a training key agreeing with its DeepSpeed key, or taken by \"auto\" or by its absence, is used") {
  CapturedLog quiet;
  auto same = resolve(with({{"optimizer", kOptimizerLr}, {"gradient_clipping", 0.5}}),
                      sets({"training.lr=1e-3", "training.max_grad_norm=0.5"}));
  CHECK(same.optimizer.lr == 1e-3);
  auto taken = resolve(with({{"optimizer", {{"type", "AdamW"}, {"params", {{"lr", "auto"}}}}},
                             {"gradient_clipping", "auto"}}),
                       sets({"training.lr=5e-4", "training.max_grad_norm=0.25", "training.micro_batch_size=3"}));
  CHECK(taken.optimizer.lr == 5e-4);
  CHECK(taken.gradient_clipping == 0.25);
  CHECK(taken.train_micro_batch_size_per_gpu == 3);
  // gradient_clipping left out is training.max_grad_norm, as "auto" is.
  CHECK(resolve(with({}), sets({"training.max_grad_norm=0.25"})).gradient_clipping == 0.25);
  CHECK(resolve(with({})).gradient_clipping == 1.0);
  // An explicit DeepSpeed scheduler whose "auto" warmup takes the training block's.
  auto warm = resolve(with({{"scheduler", {{"type", "WarmupLR"}, {"params", {{"warmup_num_steps", "auto"}}}}}}),
                      sets({"training.warmup_steps=1"}));
  CHECK(warm.scheduler.warmup_num_steps == 2);  // DeepSpeed's at least 2
}

TEST_CASE("the resolved training block holds what its keys stand for, so the printed config loads back") {
  auto c = resolve(with({{"optimizer", {{"type", "AdamW"}, {"params", {{"lr", 2e-3}}}}},
                         {"scheduler", {{"type", "WarmupLR"}, {"params", {{"warmup_num_steps", 40}}}}},
                         {"gradient_clipping", 0.3},
                         {"train_batch_size", 12},
                         {"training", {{"warmup_ratio", 0.0}}}}));
  CHECK(c.training.lr == 2e-3);
  CHECK(c.training.max_grad_norm == 0.3);
  CHECK(c.training.micro_batch_size == 4);
  CHECK(c.training.gradient_accumulation_steps == 3);
  CHECK(c.training.warmup_steps == 40);
  CHECK(c.training.warmup_ratio == 0.0);
  CHECK(c.training.lr_scheduler_type.empty());
  const json printed = to_json(c);
  CHECK(printed["training"]["lr_scheduler_type"].is_null());
  CHECK(to_json(resolve(printed)) == printed);
  // Without a scheduler block, a warmup ratio is printed as the steps it makes.
  auto linear = to_json(resolve(with({{"training", {{"steps", 25}, {"warmup_ratio", 0.1}}}})));
  CHECK(linear["training"]["warmup_steps"] == 3);
  CHECK(linear["training"]["warmup_ratio"] == 0.0);
  CHECK(linear["training"]["lr_scheduler_type"] == "linear");
  CHECK(linear["scheduler"].is_null());
}

TEST_CASE("where lr, schedule, batch and precision came from") {
  auto preset = load_config("zero2", sets({"training.lr=5e-4"}));
  CHECK(preset.provenance.lr ==
        "lr 0.0005 from scheduler.params.warmup_max_lr \"auto\" (config) = training.lr (--set training.lr=5e-4)");
  CHECK(preset.provenance.schedule.rfind("schedule WarmupDecayLR from scheduler (config), log warmup 2 steps from "
                                         "scheduler.params.warmup_num_steps \"auto\" (config) = training.warmup_steps "
                                         "(default), decay to step 100 from scheduler.params.total_num_steps \"auto\" "
                                         "(config) = training.steps (default)", 0) == 0);
  CHECK(preset.provenance.batch ==
        "batch 4 = 4 x 1 x 1 rank from train_micro_batch_size_per_gpu \"auto\" (config) = training.micro_batch_size "
        "(default), gradient_accumulation_steps \"auto\" (config) = training.gradient_accumulation_steps (default)");
  CHECK(preset.provenance.precision == "precision bf16 from bf16.enabled \"auto\" (config); bf16 \"auto\": the device "
                                       "has bf16");

  ResolveOptions o = sets({"training.warmup_ratio=0.1"});
  o.world_size = 2;
  o.steps = 30;
  auto plain =
      resolve({{"train_batch_size", 16}, {"train_micro_batch_size_per_gpu", 2}, {"fp16", {{"enabled", "auto"}}}}, o);
  CHECK(plain.provenance.lr == "lr 5e-05 from training.lr (default), no optimizer block");
  CHECK(
      plain.provenance.schedule ==
      "schedule linear, the Hugging Face Trainer's (no scheduler block, training.lr_scheduler_type default): warmup 3 "
      "steps from training.warmup_ratio (--set training.warmup_ratio=0.1), then down to 0 at step 30");
  CHECK(plain.provenance.batch == "batch 16 = 2 x 4 x 2 ranks from train_micro_batch_size_per_gpu (config), "
                                  "gradient_accumulation_steps derived from train_batch_size (config)");
  CHECK(plain.provenance.precision == "precision fp32 from fp16.enabled \"auto\" (config); fp16 \"auto\": off unless "
                                      "set to true, as with the Hugging Face Trainer without --fp16");
  CHECK(resolve(with({})).provenance.precision == "precision fp32, the default (neither fp16 nor bf16 enabled)");
}
