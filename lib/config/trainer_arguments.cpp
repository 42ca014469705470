#include "config/trainer_arguments.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "config/overrides.hpp"
#include "core/error.hpp"

namespace zt::config {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// HfArgumentParser's string_to_bool.
bool switch_value(const std::string& option, const std::string& text) {
  const std::string v = lower(text);
  if (v == "yes" || v == "true" || v == "t" || v == "y" || v == "1") return true;
  if (v == "no" || v == "false" || v == "f" || v == "n" || v == "0") return false;
  fail("{} {}: expected true or false (yes/no, t/f, y/n, 1/0 also do, as the Trainer reads them)", option, text);
}

std::string joined(const std::string& dir, const char* name) {
  return dir.empty() || dir.back() == '/' ? dir + name : dir + "/" + name;
}

const TrainerArgument* find_argument(const std::string& name) {
  const auto& table = trainer_arguments();
  auto it = std::find_if(table.begin(), table.end(), [&](const TrainerArgument& a) { return name == a.name; });
  return it == table.end() ? nullptr : &*it;
}

}  // namespace

const std::vector<TrainerArgument>& trainer_arguments() {
  using V = TrainerValue;
  static const std::vector<TrainerArgument> table = {
      {"model_name_or_path", "model", V::Value, "the same as --model"},
      {"output_dir", "", V::Value,
       "DIR/checkpoints (training.checkpoint_dir), DIR/metrics.jsonl (training.metrics) and the final model in DIR "
       "itself (training.save_final), as the Trainer's checkpoints and save_model"},
      {"learning_rate", "training.lr", V::Value, "peak learning rate (training.lr; default 5e-5)", {"lr"}},
      {"num_train_epochs", "training.epochs", V::Value, "passes over the data (training.epochs)",
       {"epochs", "num_epochs", "n_epochs"}},
      {"max_steps", "training.steps", V::Value, "optimizer steps (training.steps); -1: not given, as the Trainer's"},
      {"per_device_train_batch_size", "training.micro_batch_size", V::Value,
       "sequences per rank and micro-batch (training.micro_batch_size)", {"batch_size", "micro_batch_size"}},
      {"gradient_accumulation_steps", "training.gradient_accumulation_steps", V::Value,
       "micro-batches per step (training.gradient_accumulation_steps)", {"grad_accum"}},
      {"warmup_steps", "training.warmup_steps", V::Value, "warmup steps (training.warmup_steps)"},
      {"warmup_ratio", "training.warmup_ratio", V::Value, "warmup as a fraction of the steps (training.warmup_ratio)"},
      {"lr_scheduler_type", "training.lr_scheduler_type", V::Value,
       "linear, cosine, cosine_with_restarts, polynomial, constant, constant_with_warmup, inverse_sqrt or "
       "cosine_with_min_lr (training.lr_scheduler_type)",
       {"scheduler", "lr_scheduler", "scheduler_type"}},
      {"lr_scheduler_kwargs", "training.lr_scheduler_kwargs", V::Value,
       "the schedule's parameters as JSON, e.g. '{\"min_lr_rate\": 0.1}' (training.lr_scheduler_kwargs)"},
      {"weight_decay", "training.weight_decay", V::Value, "AdamW's weight decay (training.weight_decay)"},
      {"adam_beta1", "training.adam_beta1", V::Value, "AdamW's beta1 (training.adam_beta1)", {"beta1"}},
      {"adam_beta2", "training.adam_beta2", V::Value, "AdamW's beta2 (training.adam_beta2)", {"beta2"}},
      {"adam_epsilon", "training.adam_epsilon", V::Value, "AdamW's epsilon (training.adam_epsilon)",
       {"adam_eps", "eps", "epsilon"}},
      {"max_grad_norm", "training.max_grad_norm", V::Value, "gradient clipping (training.max_grad_norm)",
       {"clip_grad_norm", "grad_clip"}},
      {"logging_steps", "training.logging_steps", V::Value, "a step line every N steps (training.logging_steps)",
       {"log_every", "log_steps"}},
      {"save_steps", "training.save_interval", V::Value, "a checkpoint every N steps (training.save_interval)"},
      {"save_total_limit", "training.keep_last", V::Value, "checkpoints kept (training.keep_last)"},
      {"eval_steps", "training.eval_interval", V::Value, "evaluate every N steps (training.eval_interval)"},
      {"seed", "training.seed", V::Value, "seed of the weights and the data order (training.seed)"},
      {"ddp_timeout", "training.comm_timeout", V::Value, "seconds a collective may take (training.comm_timeout)"},
      {"bf16", "bf16.enabled", V::Switch, "train in bf16 (bf16.enabled); --bf16 false turns it off"},
      {"fp16", "fp16.enabled", V::Switch, "train in fp16 (fp16.enabled)"},
      {"gradient_checkpointing", "training.gradient_checkpointing", V::Switch,
       "recompute each block in backward (training.gradient_checkpointing)"},
      {"resume_from_checkpoint", "training.resume", V::OptionalPath,
       "a checkpoint to resume from (training.resume); alone or true: the latest (--resume is short for it)",
       {},
       "resume"},
      {"overwrite_output_dir", "training.overwrite", V::Switch,
       "start afresh over an earlier run in the output directory, removing its checkpoints (training.overwrite); "
       "without it, or --resume_from_checkpoint, a run that finds one is refused"},
  };
  return table;
}

const std::vector<IgnoredTrainerArgument>& ignored_trainer_arguments() {
  static const char* const kSteps = "zerotrain counts in steps";
  static const std::vector<IgnoredTrainerArgument> table = {
      {"do_train", "zerotrain always trains"},
      {"do_eval", "evaluation runs when data.val is given, every training.eval_interval steps (--eval_steps)"},
      {"report_to", "the metrics go to training.metrics (DIR/metrics.jsonl with --output_dir), and to csv_monitor and "
                    "tensorboard when their blocks are enabled"},
      {"logging_dir", "the metrics go to training.metrics; tensorboard's to tensorboard.output_path"},
      {"run_name", "a run is known by its metrics file and tensorboard.job_name"},
      {"per_device_eval_batch_size", "evaluation reads windows of per_device_train_batch_size sequences, and the val "
                                     "loss, the mean over every token, does not depend on it"},
      {"eval_strategy", kSteps},
      {"evaluation_strategy", kSteps},
      {"save_strategy", kSteps},
      {"logging_strategy", kSteps},
      {"logging_first_step", "step 1 is always logged"},
      {"dataloader_num_workers", "zerotrain reads token files itself"},
      {"dataloader_pin_memory", "zerotrain reads token files itself"},
      {"remove_unused_columns", "zerotrain reads token files, not dataset columns"},
      {"ddp_find_unused_parameters", "every parameter takes part in every step"},
      {"torch_compile", "there is no PyTorch to compile"},
      {"tf32", "the matmuls compute in the training dtype"},
      {"optim", "the optimizer is AdamW (an optimizer block can choose Adam)"},
      {"save_only_model", "checkpoints hold the optimizer state so that a run resumes exactly"},
      {"push_to_hub", "nothing is uploaded"},
      {"disable_tqdm", "the progress line shows on a terminal only (ZT_PROGRESS=off hides it)"},
  };
  return table;
}

std::vector<std::pair<std::string, std::string>> trainer_names_of_training_keys() {
  std::vector<std::pair<std::string, std::string>> names;
  const std::string prefix = "training.";
  for (const TrainerArgument& a : trainer_arguments()) {
    const std::string key = a.key;
    if (key.rfind(prefix, 0) != 0 || key.substr(prefix.size()) == a.name) continue;
    names.emplace_back(a.name, key.substr(prefix.size()));
  }
  return names;
}

std::string output_dir_checkpoints(const std::string& dir) { return joined(dir, "checkpoints"); }
std::string output_dir_metrics(const std::string& dir) { return joined(dir, "metrics.jsonl"); }

std::vector<CommandLineSetting> trainer_argument_settings(const TrainerArgumentValue& given) {
  const TrainerArgument* a = find_argument(given.name);
  if (!a || std::string(a->key) == "model") fail("--{}: not a Hugging Face Trainer argument zerotrain maps", given.name);
  const std::string option = "--" + given.name;
  const std::string origin = given.value ? option + " " + *given.value : option;
  if (a->value == TrainerValue::Switch) return {{a->key, !given.value || switch_value(option, *given.value), origin}};
  if (a->value == TrainerValue::OptionalPath) {
    // alone or true: the latest checkpoint; false: none (HfArgumentParser would read both as paths)
    const std::string v = given.value ? *given.value : "true";
    const std::string word = lower(v);
    return {{a->key, word == "true" ? "latest" : word == "false" ? "none" : v, origin}};
  }
  if (!given.value) fail("{}: needs a value", option);
  const std::string& text = *given.value;
  if (std::string(a->key).empty()) {  // output_dir
    return {{"training.checkpoint_dir", output_dir_checkpoints(text), origin},
            {"training.metrics", output_dir_metrics(text), origin},
            {"training.save_final", text, origin}};
  }
  if (std::string(a->name) == "max_steps" && text == "-1") return {};  // the Trainer's "not given"
  return {{a->key, parse_option_value(text, origin), origin}};
}

std::string describe_trainer_arguments(const std::vector<TrainerArgumentValue>& given) {
  std::string text;
  for (const TrainerArgumentValue& g : given) {
    const auto settings = trainer_argument_settings(g);
    if (settings.empty()) continue;
    std::string keys;
    for (const CommandLineSetting& s : settings) keys += fmt::format("{}{} {}", keys.empty() ? "" : ", ", s.key, s.value.dump());
    text += fmt::format("{}{} = {}", text.empty() ? "" : "; ", settings.front().origin, keys);
  }
  return text;
}

std::string ignored_argument_note(const TrainerArgumentValue& given) {
  const auto& table = ignored_trainer_arguments();
  auto it = std::find_if(table.begin(), table.end(), [&](const auto& a) { return given.name == a.name; });
  const char* why = it == table.end() ? "zerotrain has no such setting" : it->why;
  return fmt::format("--{}{} is ignored: {}", given.name, given.value ? " " + *given.value : "", why);
}

}  // namespace zt::config
