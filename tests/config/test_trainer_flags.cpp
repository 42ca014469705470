// The flags of the tools a fine-tune comes from, as their own code reads them: transformers 5's
// --warmup_steps as a ratio, TRL's and LLaMA-Factory's LoRA and sequence arguments with each
// tool's defaults, --report_to tensorboard and --logging_dir where the Trainer writes its events,
// and the Trainer's evaluation and best-model keys with the validation file tokenize writes.
#include <filesystem>
#include <fstream>
#include <regex>

#include "config/trainer_arguments.hpp"
#include "config_test_support.hpp"

using namespace zt::config;
using namespace zt::config::testing;
namespace fs = std::filesystem;

namespace {

ResolveOptions trainer(std::vector<TrainerArgumentValue> arguments, const std::string& model = "") {
  ResolveOptions o = world(1);
  o.trainer_arguments = std::move(arguments);
  if (!model.empty()) o.model = model;
  return o;
}

// A directory of its own under the test's working directory, emptied.
std::string fresh(const std::string& name) {
  const fs::path dir = fs::current_path() / "trainer-flags" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

void touch(const std::string& path) { std::ofstream(path) << "x"; }

}  // namespace

TEST_CASE("--warmup_steps: an integer is steps, a float in [0, 1) the ratio of the steps (transformers 5)") {
  const Config ratio = resolve(with({}), trainer({{"warmup_steps", "0.1"}, {"max_steps", "45"}}));
  CHECK(ratio.scheduler.warmup_num_steps == 5);  // math.ceil(45 * 0.1), as TrainingArguments.get_warmup_steps
  CHECK(ratio.training.warmup_steps == 5);       // printed as the warmup the run uses
  CHECK(ratio.provenance.schedule.find("warmup 5 steps from training.warmup_steps (--warmup_steps 0.1)") !=
        std::string::npos);
  CHECK(resolve(with({}), trainer({{"warmup_steps", "3"}})).scheduler.warmup_num_steps == 3);
  CHECK(resolve(with({}), trainer({{"warmup_steps", "0.0"}})).scheduler.warmup_num_steps == 0);
  CHECK(resolve(with({}), trainer({{"warmup_ratio", "0.2"}, {"max_steps", "10"}})).scheduler.warmup_num_steps == 2);
  // The training block reads it alike.
  CHECK(resolve(with({{"training", {{"warmup_steps", 0.25}, {"steps", 8}}}})).scheduler.warmup_num_steps == 2);
  CHECK(error_of(with({}), trainer({{"warmup_steps", "1.5"}})) ==
        "--warmup_steps 1.5: training.warmup_steps: 1.5 is neither a whole number of steps nor a ratio of the steps "
        "(expected an integer >= 0, or a float in [0, 1): the ratio)");
  CHECK(error_of(with({}), trainer({{"warmup_steps", "0.1"}, {"warmup_ratio", "0.2"}})) ==
        "--warmup_steps 0.1: training.warmup_steps: 0.1 is a ratio of the steps, given together with "
        "training.warmup_ratio 0.2 (expected one of them)");
}

TEST_CASE("TRL's --use_peft and its LoRA and SFT arguments, with TRL's defaults for what is not given") {
  const Config c = resolve(with({}), trainer({{"use_peft", std::nullopt},
                                              {"lora_r", "32"},
                                              {"lora_target_modules", "q_proj,v_proj"},
                                              {"packing", std::nullopt},
                                              {"max_length", "64"}},
                                             "llama-tiny"));
  CHECK(c.lora.enabled);
  CHECK(c.lora.r == 32);
  CHECK(c.lora.alpha == 32);     // TRL's ModelConfig.lora_alpha
  CHECK(c.lora.dropout == 0.05);  // TRL's ModelConfig.lora_dropout
  CHECK(c.lora.target_modules == std::vector<std::string>{"q_proj", "v_proj"});
  CHECK(c.data.packing == zt::Packing::Pack);
  CHECK(c.data.seq_len == 64);
  // --use_peft alone: TRL's r, alpha and dropout; the family's target modules, as PEFT's.
  const Config alone = resolve(with({}), trainer({{"use_peft", "true"}}, "llama-tiny"));
  CHECK(alone.lora.r == 16);
  CHECK(alone.lora.target_modules == std::vector<std::string>{"q_proj", "v_proj"});
  // A config's lora block keeps its values; TRL's defaults fill only what is not given.
  const Config block = resolve(with({{"lora", {{"r", 4}}}}), trainer({{"use_peft", std::nullopt}}, "llama-tiny"));
  CHECK(block.lora.r == 4);
  CHECK(block.lora.alpha == 32);
  CHECK(resolve(with({{"lora", {{"r", 4}}}}), trainer({{"lora_r", "8"}}, "llama-tiny")).lora.r == 8);
  CHECK_FALSE(resolve(with({}), trainer({{"use_peft", "false"}})).lora.enabled);
  CHECK(resolve(with({{"data", {{"packing", "pack"}}}}), trainer({{"packing", "false"}})).data.packing ==
        zt::Packing::None);
  // TRL trains the whole model without --use_peft: a LoRA setting alone cannot be honoured.
  CHECK(error_of(with({}), trainer({{"lora_r", "16"}})) ==
        "--lora_r 16: LoRA settings without LoRA (TRL trains the whole model unless --use_peft is given; expected "
        "--use_peft, --finetuning_type lora or a lora block)");
}

TEST_CASE("LLaMA-Factory's --finetuning_type, --lora_rank, --lora_target and --cutoff_len, with its defaults") {
  const Config c = resolve(with({}), trainer({{"lora_rank", "4"}, {"lora_target", "all"}, {"cutoff_len", "32"}},
                                             "llama-tiny"));
  CHECK(c.lora.enabled);  // LLaMA-Factory's finetuning_type is lora unless it says otherwise
  CHECK(c.lora.r == 4);
  CHECK(c.lora.alpha == 8);  // lora_rank * 2
  CHECK(c.lora.dropout == 0.0);
  CHECK(c.lora.target_modules == std::vector<std::string>{"all-linear"});
  CHECK(c.data.seq_len == 32);
  const Config listed = resolve(with({}), trainer({{"finetuning_type", "lora"}, {"lora_target", "q_proj,o_proj"},
                                                   {"lora_alpha", "64"}},
                                                  "llama-tiny"));
  CHECK(listed.lora.r == 8);
  CHECK(listed.lora.alpha == 64);
  CHECK(listed.lora.target_modules == std::vector<std::string>{"q_proj", "o_proj"});
  CHECK_FALSE(resolve(with({}), trainer({{"finetuning_type", "full"}})).lora.enabled);
  CHECK(error_of(with({}), trainer({{"finetuning_type", "full"}, {"lora_rank", "8"}})) ==
        "--finetuning_type full trains the whole model, without adapters; --lora_rank 8 asks for LoRA (expected one "
        "of them)");
  CHECK(error_of(with({}), trainer({{"finetuning_type", "freeze"}})) ==
        "--finetuning_type freeze: LLaMA-Factory's freeze tuning (its last layers train) is not available here "
        "(expected lora or full; training.freeze names the parameters that do not train, docs/models.md)");
  // Two tools' names of one setting: one of them.
  CHECK(error_of(with({}), trainer({{"max_length", "64"}, {"cutoff_len", "32"}})) ==
        "--max_length and --cutoff_len both give data.seq_len (expected one of them)");
  CHECK(describe_trainer_arguments({{"lora_rank", "4"}}) ==
        "--lora_rank 4 = lora.r 4; --lora_rank 4 (LLaMA-Factory's default) = lora.enabled true unless given, "
        "lora.alpha 8 unless given, lora.dropout 0.0 unless given, lora.target_modules [\"all-linear\"] unless given");
}

TEST_CASE("--report_to tensorboard writes where the Trainer's logging_dir is: DIR/runs/<date>_<host>") {
  const Config c = resolve(with({}), trainer({{"output_dir", "out"}, {"report_to", "tensorboard"}}));
  CHECK(c.tensorboard.enabled);
  CHECK(c.tensorboard.output_path == "out/runs");
  CHECK(std::regex_match(c.tensorboard.job_name, std::regex(R"([A-Z][a-z]{2}\d{2}_\d{2}-\d{2}-\d{2}_.+)")));
  const Config logging_dir =
      resolve(with({}), trainer({{"report_to", "all"}, {"logging_dir", "tb/run1/"}, {"output_dir", "out"}}));
  CHECK(logging_dir.tensorboard.enabled);
  CHECK(logging_dir.tensorboard.output_path == "tb");
  CHECK(logging_dir.tensorboard.job_name == "run1");
  CHECK(resolve(with({}), trainer({{"report_to", "tensorboard"}, {"logging_dir", "logs"}})).tensorboard.output_path ==
        ".");
  CHECK_FALSE(resolve(with({}), trainer({{"report_to", "none"}})).tensorboard.enabled);
  // Integrations that are not here warn; a name that is no integration is an error.
  const std::vector<TrainerArgumentValue> wandb = {{"report_to", "tensorboard,wandb"}};
  CHECK(resolve(with({}), trainer(wandb)).tensorboard.enabled);
  CHECK(trainer_argument_warnings(wandb) ==
        std::vector<std::string>{"--report_to tensorboard,wandb: wandb is not available here (nothing is sent "
                                 "anywhere); the metrics go to training.metrics and TensorBoard"});
  CHECK(error_of(with({}), trainer({{"report_to", "tensorbord"}})) ==
        "--report_to tensorbord: tensorbord is not an integration (expected tensorboard, all or none)");
}

TEST_CASE("evaluation asked for without validation data is an error naming the fix") {
  const std::string expected_fix =
      "asks for evaluation, and there is no validation data: data.val is empty, and no X.val.bin lies beside "
      "data.train X.bin (expected --set data.val=FILE, or a token file X.bin from zerotrain tokenize --val N%, which "
      "writes X.val.bin beside it)";
  const json synthetic = with({{"data", {{"format", "synthetic"}}}});
  CHECK(error_of(synthetic, trainer({{"eval_steps", "10"}})) ==
        "--eval_steps 10: training.eval_strategy: " + expected_fix);
  CHECK(error_of(synthetic, trainer({{"eval_strategy", "steps"}})) ==
        "--eval_strategy steps: training.eval_strategy: " + expected_fix);
  CHECK(error_of(with({{"data", {{"format", "synthetic"}}}, {"training", {{"early_stopping_patience", 2}}}})) ==
        "test.json: training.early_stopping_patience: " + expected_fix);
  // --eval_strategy steps without --eval_steps evaluates every logging_steps, as the Trainer.
  CHECK(resolve(with({}), trainer({{"eval_strategy", "steps"}, {"logging_steps", "5"}})).training.eval_interval == 5);
  CHECK(resolve(with({}), trainer({{"eval_strategy", "steps"}, {"eval_steps", "7"}})).training.eval_interval == 7);
  // Without anything asking, no validation data evaluates nothing, as before.
  CHECK(resolve(synthetic).data.val.empty());
  CHECK(resolve(synthetic, trainer({{"eval_steps", "10"}, {"eval_strategy", "no"}})).training.eval_strategy ==
        EvalStrategy::No);
  CHECK(error_of(with({}), trainer({{"eval_strategy", "epoch"}})) ==
        "--eval_strategy epoch: zerotrain counts in steps (expected steps, with --eval_steps N, or no)");
}

TEST_CASE("the validation file tokenize --val wrote beside data.train is data.val when none is given") {
  const std::string dir = fresh("beside");
  touch(dir + "/chats.bin");
  ResolveOptions o = trainer({{"eval_steps", "5"}});
  o.data = dir + "/chats.bin";
  CHECK(error_of(with({}), o).find("there is no validation data") != std::string::npos);
  touch(dir + "/chats.val.bin");
  CHECK(resolve(with({}), o).data.val == std::vector<std::string>{dir + "/chats.val.bin"});
  // Given, data.val is what it says: "" is none.
  CHECK(resolve(with({{"data", {{"val", ""}}}}), trainer({})).data.val.empty());
  ResolveOptions none = world(1);
  none.data = dir + "/chats.bin";
  none.overrides = {"data.val="};
  CHECK(resolve(with({}), none).data.val.empty());
}

TEST_CASE("the best model: eval_loss, lower is better, as the Trainer's defaults; what it needs") {
  const json base = with({{"training", {{"checkpoint_dir", "ck"}}}});
  const Config best = resolve(base, trainer({{"save_strategy", "best"}, {"save_total_limit", "2"}}));
  CHECK(best.training.save_strategy == SaveStrategy::Best);
  CHECK(best.training.metric_for_best_model == "eval_loss");
  CHECK_FALSE(best.training.greater_is_better);
  CHECK(best.training.keep_last == 2);
  CHECK(resolve(base, trainer({{"metric_for_best_model", "loss"}})).training.metric_for_best_model == "eval_loss");
  CHECK(resolve(base, trainer({{"load_best_model_at_end", std::nullopt}, {"greater_is_better", std::nullopt},
                               {"save_steps", "20"}, {"eval_steps", "10"}}))
            .training.greater_is_better);
  CHECK(resolve(with({})).training.metric_for_best_model.empty());  // nothing asks for a best
  const Config stopping = resolve(with({}), trainer({{"early_stopping_patience", "3"},
                                                     {"early_stopping_threshold", "0.01"}}));
  CHECK(stopping.training.early_stopping_patience == 3);
  CHECK(stopping.training.early_stopping_threshold == 0.01);
  CHECK(stopping.training.metric_for_best_model == "eval_loss");
  CHECK(error_of(base, trainer({{"metric_for_best_model", "accuracy"}})) ==
        "--metric_for_best_model accuracy: training.metric_for_best_model: \"accuracy\" is not a metric zerotrain "
        "evaluates (expected eval_loss, or loss: the validation loss)");
  CHECK(error_of(with({}), trainer({{"save_strategy", "best"}})) ==
        "--save_strategy best: training.save_strategy: needs training.checkpoint_dir (expected a directory for the "
        "checkpoints, e.g. --output_dir)");
  CHECK(
      error_of(base, trainer({{"load_best_model_at_end", std::nullopt}, {"save_steps", "15"}, {"eval_steps", "10"}})) ==
      "--load_best_model_at_end: training.load_best_model_at_end: needs a checkpoint at every evaluation that can "
      "be the best: training.save_interval 15 is not a multiple of training.eval_interval 10 (expected "
      "save_interval a multiple of eval_interval, as the Trainer asks, or save_strategy best)");
}
