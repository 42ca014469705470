// One test per row of the "auto" table of docs/config.md.
#include "config_test_support.hpp"

using namespace zt::config;
using namespace zt::config::testing;

namespace {
const json kTraining = {{"micro_batch_size", 6}, {"gradient_accumulation_steps", 3}};
}

TEST_CASE("auto batch sizes come from the training block; train_batch_size is MB*GA*W") {
  auto c = resolve({{"train_batch_size", "auto"},
                    {"train_micro_batch_size_per_gpu", "auto"},
                    {"gradient_accumulation_steps", "auto"},
                    {"training", kTraining}},
                   world(3));
  CHECK(c.train_micro_batch_size_per_gpu == 6);
  CHECK(c.gradient_accumulation_steps == 3);
  CHECK(c.train_batch_size == 6 * 3 * 3);
  auto d = resolve({{"train_micro_batch_size_per_gpu", "auto"}}, world(2));  // training defaults
  CHECK(d.train_micro_batch_size_per_gpu == 4);
  CHECK(d.gradient_accumulation_steps == 1);
  CHECK(d.train_batch_size == 8);
  // "auto" train_batch_size with an explicit micro batch: explicit MB, the training block's GA.
  auto e = resolve({{"train_batch_size", "auto"},
                    {"train_micro_batch_size_per_gpu", 2},
                    {"training", {{"gradient_accumulation_steps", 3}}}},
                   world(2));
  CHECK(e.train_batch_size == 2 * 3 * 2);
  CHECK(e.gradient_accumulation_steps == 3);
}

TEST_CASE("auto gradient_clipping is training.max_grad_norm") {
  const json training = {{"max_grad_norm", 0.5}};
  CHECK(resolve(with({{"gradient_clipping", "auto"}, {"training", training}})).gradient_clipping == 0.5);
  CHECK(resolve(with({{"gradient_clipping", "auto"}})).gradient_clipping == 1.0);
}

TEST_CASE("auto optimizer params: the Trainer's defaults, or training.lr, adam_beta1/2, adam_epsilon, weight_decay") {
  const json block = {{"type", "AdamW"},
                      {"params", {{"lr", "auto"}, {"betas", "auto"}, {"eps", "auto"}, {"weight_decay", "auto"}}}};
  auto trainer = resolve(with({{"optimizer", block}})).optimizer;  // TrainingArguments' defaults
  CHECK(trainer.lr == 5e-5);
  CHECK(trainer.beta1 == 0.9);
  CHECK(trainer.beta2 == 0.999);
  CHECK(trainer.eps == 1e-8);
  CHECK(trainer.weight_decay == 0.0);
  auto o = resolve(with({{"optimizer", block},
                         {"training", {{"lr", 2e-4}, {"adam_beta1", 0.8}, {"adam_beta2", 0.95}, {"adam_epsilon", 1e-6},
                                       {"weight_decay", 0.1}}}}))
               .optimizer;
  CHECK(o.lr == 2e-4);
  CHECK(o.beta1 == 0.8);
  CHECK(o.beta2 == 0.95);
  CHECK(o.eps == 1e-6);
  CHECK(o.weight_decay == 0.1);
  // Without an optimizer block the Trainer's AdamW takes the same keys.
  auto none = resolve(with({{"training", {{"adam_beta2", 0.95}, {"weight_decay", 0.1}}}})).optimizer;
  CHECK(none.beta2 == 0.95);
  CHECK(none.weight_decay == 0.1);
}

TEST_CASE("auto scheduler params: 0 / training.lr, training.warmup_steps / training.steps") {
  auto s = resolve(with({{"scheduler",
                          {{"type", "WarmupDecayLR"},
                           {"params",
                            {{"warmup_min_lr", "auto"},
                             {"warmup_max_lr", "auto"},
                             {"warmup_num_steps", "auto"},
                             {"total_num_steps", "auto"}}}}},
                         {"training", {{"lr", 2e-4}, {"warmup_steps", 50}, {"steps", 500}}}}))
               .scheduler;
  CHECK(s.warmup_min_lr == 0.0);
  CHECK(s.warmup_max_lr == 2e-4);
  CHECK(s.warmup_num_steps == 50);
  CHECK(s.total_num_steps == 500);
  // --steps feeds "auto" total_num_steps; without steps anywhere the default 100 does.
  auto o = world(1);
  o.steps = 40;
  json raw = with({{"scheduler", {{"type", "WarmupDecayLR"}, {"params", {{"total_num_steps", "auto"}}}}}});
  CHECK(resolve(raw, o).scheduler.total_num_steps == 40);
  CHECK(resolve(raw).scheduler.total_num_steps == 100);
}

TEST_CASE("auto precision: as the Hugging Face Trainer with --bf16 where the device has bf16, never --fp16") {
  const json both_auto = with({{"fp16", {{"enabled", "auto"}}}, {"bf16", {{"enabled", "auto"}}}});
  const json bf16_auto = with({{"bf16", {{"enabled", "auto"}}}});
  const json fp16_auto = with({{"fp16", {{"enabled", "auto"}}}});
  ResolveOptions cpu = world(1);  // CPU backend: computes in fp32, stores bf16
  ResolveOptions old_gpu = world(1);
  old_gpu.cpu_backend = false;
  ResolveOptions new_gpu = old_gpu;
  new_gpu.gpu_supports_bf16 = true;
  for (const auto& raw : {both_auto, bf16_auto}) {
    INFO(raw.dump());
    CHECK(resolve(raw, cpu).dtype() == "bf16");
    CHECK(resolve(raw, new_gpu).dtype() == "bf16");
    CHECK(resolve(raw, old_gpu).dtype() == "fp32");
  }
  // fp16 "auto" alone follows the Trainer's --fp16, which zerotrain never sets: fp32, on every device.
  for (const auto& options : {cpu, new_gpu, old_gpu}) CHECK(resolve(fp16_auto, options).dtype() == "fp32");
  // An explicit choice wins over "auto" in the other block.
  CHECK(resolve(with({{"fp16", {{"enabled", true}}}, {"bf16", {{"enabled", "auto"}}}}), cpu).dtype() == "fp16");
  CHECK(resolve(with({{"fp16", {{"enabled", "auto"}}}, {"bf16", {{"enabled", true}}}}), old_gpu).dtype() == "bf16");
  CHECK(resolve(with({{"fp16", {{"enabled", "auto"}}}, {"bf16", {{"enabled", false}}}}), cpu).dtype() == "fp32");
  CHECK(resolve(with({{"fp16", {{"enabled", "auto"}}}, {"bf16", {{"enabled", false}}}}), new_gpu).dtype() == "fp32");
  CHECK(resolve(with({{"fp16", {{"enabled", false}}}, {"bf16", {{"enabled", false}}}}), cpu).dtype() == "fp32");
  CHECK(error_of(with({{"fp16", {{"enabled", true}}}, {"bf16", {{"enabled", true}}}})) ==
        "test.json: fp16.enabled: true together with bf16.enabled true (expected at most one of fp16 and bf16)");
}

TEST_CASE("auto bucket sizes from d_model") {
  const json zero = {{"stage", 3},
                     {"reduce_bucket_size", "auto"},
                     {"stage3_prefetch_bucket_size", "auto"},
                     {"stage3_param_persistence_threshold", "auto"}};
  auto z = resolve(with({{"zero_optimization", zero}, {"model", {{"preset", "gpt2-124m"}}}})).zero;
  CHECK(z.reduce_bucket_size == 768 * 768);
  CHECK(z.stage3_prefetch_bucket_size == 530841);  // int(0.9 * 589824) = int(530841.6)
  CHECK(z.stage3_param_persistence_threshold == 7680);
  auto toy = resolve(with({{"zero_optimization", zero}})).zero;
  CHECK(toy.reduce_bucket_size == 64 * 64);
  CHECK(toy.stage3_prefetch_bucket_size == 3686);
  CHECK(toy.stage3_param_persistence_threshold == 640);
}
