// The Hugging Face Trainer's side of the config: "auto" takes TrainingArguments' defaults (checked
// against transformers' own, tests/optim/hf_schedule_fixture.json), the training block takes the
// Trainer's names of its keys, the Trainer's command-line arguments set the keys they stand for
// with their option as the origin, and its schedules come with their lr_scheduler_kwargs.
#include <fstream>

#include "config/trainer_arguments.hpp"
#include "config_test_support.hpp"
#include "optim/lr_schedule.hpp"

using namespace zt::config;
using namespace zt::config::testing;

namespace {

ResolveOptions trainer(std::vector<TrainerArgumentValue> arguments) {
  ResolveOptions o = world(1);
  o.trainer_arguments = std::move(arguments);
  return o;
}

}  // namespace

TEST_CASE("with no optimizer keys the run takes the Trainer's defaults, as TrainingArguments has them") {
  std::ifstream in(std::string(ZT_SOURCE_DIR) + "/tests/optim/hf_schedule_fixture.json");
  REQUIRE(in);
  const json hf = json::parse(in)["training_arguments_defaults"];
  const Config c = resolve(with({{"optimizer", {{"type", "AdamW"},
                                                {"params", {{"lr", "auto"}, {"betas", "auto"}, {"eps", "auto"},
                                                            {"weight_decay", "auto"}}}}},
                                 {"gradient_clipping", "auto"}}));
  CHECK(c.optimizer.lr == hf["learning_rate"].get<double>());
  CHECK(c.optimizer.beta1 == hf["adam_beta1"].get<double>());
  CHECK(c.optimizer.beta2 == hf["adam_beta2"].get<double>());
  CHECK(c.optimizer.eps == hf["adam_epsilon"].get<double>());
  CHECK(c.optimizer.weight_decay == hf["weight_decay"].get<double>());
  CHECK(c.gradient_clipping == hf["max_grad_norm"].get<double>());
  const Config plain = resolve(with({}));
  CHECK(plain.training.warmup_steps == hf["warmup_steps"].get<int64_t>());
  CHECK(plain.scheduler.type == hf["lr_scheduler_type"].get<std::string>());
  CHECK(plain.optimizer.lr == hf["learning_rate"].get<double>());
}

TEST_CASE("the training block reads the Trainer's names of its keys; a near miss gets a did-you-mean") {
  const Config c = resolve(with({{"training", {{"learning_rate", 2e-5}, {"num_train_epochs", 0.5},
                                               {"max_steps", 7}, {"per_device_train_batch_size", 2},
                                               {"save_total_limit", 3}, {"eval_steps", 5}}}}));
  CHECK(c.training.lr == 2e-5);
  CHECK(c.optimizer.lr == 2e-5);
  CHECK(c.training.steps == 7);
  CHECK(c.training.epochs == 0.5);
  CHECK(c.train_micro_batch_size_per_gpu == 2);
  CHECK(c.training.keep_last == 3);
  CHECK(c.training.eval_interval == 5);
  CHECK(error_of(with({{"training", {{"learning_rate", 2e-5}, {"lr", 1e-4}}}})) ==
        "test.json: training.learning_rate: given together with training.lr (learning_rate is another name of lr); "
        "keep only lr");
  CHECK(error_of(with({{"training", {{"learning_rat", 2e-5}}}})) ==
        "test.json: training.learning_rat: unknown key; did you mean learning_rate?");
  CHECK(error_of(with({{"training", {{"num_epochs", 2}}}})) ==
        "test.json: training.num_epochs: unknown key; did you mean num_train_epochs?");
  CHECK(error_of(with({{"training", {{"learningrate", 2e-5}}}})) ==
        "test.json: training.learningrate: unknown key; did you mean learning_rate?");
}

TEST_CASE("the Trainer's arguments set the keys they stand for, and the start names them as the origin") {
  const Config c = resolve(with({{"gradient_accumulation_steps", "auto"}}),
                           trainer({{"learning_rate", "2e-5"},
                                              {"num_train_epochs", "0.01"},
                                              {"per_device_train_batch_size", "2"},
                                              {"gradient_accumulation_steps", "3"},
                                              {"warmup_ratio", "0.1"},
                                              {"weight_decay", "0.01"},
                                              {"adam_beta2", "0.95"},
                                              {"adam_epsilon", "1e-6"},
                                              {"max_grad_norm", "0.5"},
                                              {"logging_steps", "5"},
                                              {"seed", "42"},
                                              {"bf16", std::nullopt},
                                              {"gradient_checkpointing", "true"}}));
  CHECK(c.optimizer.lr == 2e-5);
  CHECK(c.train_micro_batch_size_per_gpu == 2);
  CHECK(c.gradient_accumulation_steps == 3);
  CHECK(c.optimizer.weight_decay == 0.01);
  CHECK(c.optimizer.beta2 == 0.95);
  CHECK(c.optimizer.eps == 1e-6);
  CHECK(c.gradient_clipping == 0.5);
  CHECK(c.training.logging_steps == 5);
  CHECK(c.training.seed == 42);
  CHECK(c.bf16.enabled);
  CHECK(c.recompute_activations());
  CHECK(c.scheduler.warmup_num_steps == (c.training.steps + 9) / 10);
  CHECK(c.provenance.lr == "lr 2e-05 from training.lr (--learning_rate 2e-5), no optimizer block");
  CHECK(c.provenance.length.find("from training.epochs (--num_train_epochs 0.01)") != std::string::npos);
  CHECK(c.provenance.batch.find("training.micro_batch_size (--per_device_train_batch_size 2)") != std::string::npos);
  CHECK(c.provenance.precision == "precision bf16 from bf16.enabled true (--bf16)");
  // A bad value is reported against the option that gave it.
  CHECK(error_of(with({}), trainer({{"learning_rate", "fast"}})) ==
        "--learning_rate fast: training.lr: \"fast\" is not a number (expected a number > 0)");
  CHECK(error_of(with({}), trainer({{"fp16", "maybe"}})) ==
        "--fp16 maybe: expected true or false (yes/no, t/f, y/n, 1/0 also do, as the Trainer reads them)");
  // --set comes after them and wins, as it does over --steps.
  ResolveOptions both = trainer({{"learning_rate", "2e-5"}});
  both.overrides = {"training.lr=1e-4"};
  CHECK(resolve(with({}), both).optimizer.lr == 1e-4);
}

TEST_CASE("--output_dir: checkpoints in DIR/checkpoints, metrics in DIR/metrics.jsonl, the final model in DIR") {
  const Config c = resolve(with({}), trainer({{"output_dir", "out"}, {"save_steps", "50"}, {"max_steps", "-1"}}));
  CHECK(c.training.checkpoint_dir == "out/checkpoints");
  CHECK(c.training.metrics == "out/metrics.jsonl");
  CHECK(c.training.save_final == "out");
  CHECK(c.training.save_interval == 50);
  CHECK(c.training.steps == 100);  // --max_steps -1: not given, as the Trainer reads it
  CHECK(describe_trainer_arguments({{"output_dir", "out/"}}) ==
        "--output_dir out/ = training.checkpoint_dir \"out/checkpoints\", training.metrics \"out/metrics.jsonl\", "
        "training.save_final \"out/\"");
}

TEST_CASE("--resume_from_checkpoint alone or true is the latest checkpoint; a path is that checkpoint") {
  CHECK(resolve(with({}), trainer({{"output_dir", "o"}, {"resume_from_checkpoint", std::nullopt}}))
            .training.resume.name() == "latest");
  CHECK(resolve(with({}), trainer({{"output_dir", "o"}, {"resume_from_checkpoint", "True"}})).training.resume.name() ==
        "latest");
  CHECK(
      resolve(with({}), trainer({{"resume_from_checkpoint", "o/checkpoints/step_00000010"}})).training.resume.name() ==
      "o/checkpoints/step_00000010");
  CHECK(error_of(with({}), trainer({{"resume_from_checkpoint", std::nullopt}})) ==
        "--resume_from_checkpoint: training.resume: \"latest\" needs training.checkpoint_dir (expected a checkpoint "
        "directory to resume from)");
}

TEST_CASE("training.adam_* and weight_decay that the optimizer block overrules are errors naming both") {
  const json block = {{"type", "AdamW"}, {"params", {{"lr", 1e-3}, {"betas", {0.9, 0.95}}, {"weight_decay", 0.1}}}};
  CHECK(error_of(with({{"optimizer", block}, {"training", {{"adam_beta2", 0.999}}}})) ==
        "test.json: training.adam_beta2: 0.999 is not used: optimizer.params.betas is 0.95 (config) (expected only one "
        "of them: set optimizer.params.betas to \"auto\" to use training.adam_beta2, or leave training.adam_beta2 "
        "out)");
  CHECK(error_of(with({{"optimizer", block}}), trainer({{"weight_decay", "0"}})) ==
        "--weight_decay 0: training.weight_decay: 0 is not used: optimizer.params.weight_decay is 0.1 (config) "
        "(expected only one of them: set optimizer.params.weight_decay to \"auto\" to use training.weight_decay, or "
        "leave training.weight_decay out)");
  // The same value twice is no conflict; the printed config holds what the optimizer uses.
  const Config same = resolve(with({{"optimizer", block}, {"training", {{"adam_beta2", 0.95}}}}));
  CHECK(to_json(same)["training"]["weight_decay"] == 0.1);
}

TEST_CASE("the Trainer's schedules and their lr_scheduler_kwargs") {
  const Config cosine = resolve(with({{"training", {{"lr_scheduler_type", "cosine_with_min_lr"}, {"steps", 20},
                                                    {"lr_scheduler_kwargs", {{"min_lr", 1e-5}}}, {"lr", 2e-4}}}}));
  CHECK(cosine.scheduler.type == "cosine_with_min_lr");
  CHECK(cosine.scheduler.min_lr_rate == 1e-5 / 2e-4);
  CHECK(zt::lr_at(cosine.scheduler, 2e-4, 20) == Approx(1e-5).epsilon(1e-12));
  CHECK(cosine.provenance.schedule ==
        "schedule cosine_with_min_lr, the Hugging Face Trainer's (no scheduler block, training.lr_scheduler_type "
        "config): warmup 0 steps from training.warmup_steps (default), then a cosine (0.5 cycles) down to 0.05 x the "
        "peak at step 20");
  // Printed as given, it loads back to itself.
  const json printed = to_json(cosine);
  CHECK(printed["training"]["lr_scheduler_kwargs"] == json({{"min_lr", 1e-5}}));
  CHECK(to_json(resolve(printed)) == printed);

  CHECK(error_of(with({{"training", {{"lr_scheduler_type", "cosine_with_min_lr"}}}})) ==
        "test.json: training.lr_scheduler_kwargs: cosine_with_min_lr needs min_lr or min_lr_rate (e.g. "
        "{\"min_lr_rate\": 0.1}, as transformers' get_scheduler)");
  CHECK(error_of(with({{"training", {{"lr_scheduler_type", "cosine_with_min_lr"},
                                     {"lr_scheduler_kwargs", {{"min_lr", 1e-5}, {"min_lr_rate", 0.1}}}}}})) ==
        "test.json: training.lr_scheduler_kwargs.min_lr: given together with min_lr_rate (expected one of them, as "
        "transformers)");
  CHECK(error_of(with({{"training", {{"lr_scheduler_kwargs", {{"num_cycles", 2}}}}}})) ==
        "test.json: training.lr_scheduler_kwargs.num_cycles: not a parameter of lr_scheduler_type linear (it takes "
        "none)");
  CHECK(error_of(with({{"training", {{"lr_scheduler_type", "polynomial"}, {"lr_scheduler_kwargs", {{"powr", 2}}}}}})) ==
        "test.json: training.lr_scheduler_kwargs.powr: unknown key; did you mean power?");
  CHECK(
      error_of(with({{"training", {{"lr_scheduler_type", "polynomial"}, {"lr_scheduler_kwargs", {{"lr_end", 1}}}}}})) ==
      "test.json: training.lr_scheduler_kwargs.lr_end: 1 is not below the peak learning rate 5e-05 (expected lr_end "
      "< lr, as transformers)");
  CHECK(
      error_of(with({{"scheduler", {{"type", "WarmupLR"}}},
                     {"training", {{"lr_scheduler_type", "cosine"}, {"lr_scheduler_kwargs", {{"num_cycles", 2}}}}}})) ==
      "test.json: training.lr_scheduler_type: cosine is not used: scheduler.type is WarmupLR (config) (expected only "
      "one of them: leave training.lr_scheduler_type out, or change scheduler.type)\n"
      "test.json: training.lr_scheduler_kwargs: {\"num_cycles\":2} is not used: scheduler.type is WarmupLR (config) "
      "(expected only one of them: leave training.lr_scheduler_kwargs out, or change scheduler.type)");
}

TEST_CASE("the start says when steps_per_print is not the log's interval") {
  CHECK(resolve(with({})).provenance.logging.empty());
  CHECK(resolve(with({{"steps_per_print", 10}})).provenance.logging.empty());  // the same interval
  CHECK(resolve(with({{"steps_per_print", 2000}})).provenance.logging ==
        "a step line every 10 steps from training.logging_steps (default); steps_per_print 2000 (config) is "
        "DeepSpeed's own print interval and decides nothing here");
}
