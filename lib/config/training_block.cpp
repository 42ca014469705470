// The training block: zerotrain's own run settings, and the values "auto" takes.
#include <climits>
#include <cmath>
#include <fmt/format.h>

#include <optional>

#include "config/blocks.hpp"
#include "config/schedule_kwargs.hpp"
#include "optim/trainer_schedules.hpp"

namespace zt::config {

int64_t TrainingConfig::warmup_step_count() const {
  if (warmup_steps > 0) return warmup_steps;
  return int64_t(std::ceil(double(steps) * warmup_ratio));
}

void take_trainer_names(nlohmann::json& raw, const Diagnostics& diag) {
  if (!raw.is_object() || !raw.contains("training") || !raw["training"].is_object()) return;
  nlohmann::json& training = raw["training"];
  for (const auto& [trainer_name, key] : trainer_names_of_training_keys()) {
    if (!training.contains(trainer_name)) continue;
    const std::string from = "training." + trainer_name, to = "training." + key;
    if (training.contains(key))
      diag.reject(from, fmt::format("given together with {} ({} is another name of {}); keep only {}", to,
                                    trainer_name, key, key));
    else
      training[key] = training[trainer_name];
    training.erase(trainer_name);
    if (diag.origins) diag.origins->alias(from, to);
  }
}

std::string TrainingConfig::evaluation_asked_by() const {
  if (eval_strategy == EvalStrategy::Steps) return "eval_strategy";
  if (save_strategy == SaveStrategy::Best) return "save_strategy";
  if (load_best_model_at_end) return "load_best_model_at_end";
  if (early_stopping_patience > 0) return "early_stopping_patience";
  return "";
}

namespace {

// "" is none; a name other than none, latest and auto is a step directory's path.
Resume read_resume(const std::string& text) {
  if (text.empty()) return {};
  if (const std::optional<ResumeFrom> from = kResumeNames.find(text)) return {*from, ""};
  return {ResumeFrom::Path, text};
}

// The best checkpoint as the Trainer keeps it: metric_for_best_model (eval_loss, also spelt loss: the
// only metric evaluation gives) defaults to eval_loss when anything asks for a best, and
// greater_is_better to whether the metric is not a loss; load_best_model_at_end needs a checkpoint
// at every step that can be the best.
void read_best(Block& b, TrainingConfig& t, std::optional<bool> greater) {
  const std::string& m = t.metric_for_best_model;
  if (!m.empty() && m != "loss" && m != "eval_loss")
    b.fail("metric_for_best_model", fmt::format("{} is not a metric zerotrain evaluates (expected eval_loss, or loss: "
                                                "the validation loss)",
                                                show(nlohmann::json(m))));
  if (!m.empty() || t.save_strategy == SaveStrategy::Best || t.load_best_model_at_end || t.early_stopping_patience > 0)
    t.metric_for_best_model = "eval_loss";
  t.greater_is_better = greater.value_or(false);  // the Trainer's default: not for a name ending in "loss"
  if (t.eval_strategy == EvalStrategy::No && !t.evaluation_asked_by().empty())
    b.fail(t.evaluation_asked_by(), fmt::format("needs evaluation, and training.eval_strategy is \"no\" (expected "
                                                "eval_strategy steps or auto)"));
  if (!t.evaluation_asked_by().empty() && t.eval_interval == 0)
    b.fail("eval_interval", fmt::format("0 evaluates nothing, and training.{} asks for evaluation (expected the "
                                        "steps between evaluations, >= 1)",
                                        t.evaluation_asked_by()));
  if ((t.save_strategy == SaveStrategy::Best || t.load_best_model_at_end) && t.checkpoint_dir.empty())
    b.fail(t.save_strategy == SaveStrategy::Best ? "save_strategy" : "load_best_model_at_end",
           "needs training.checkpoint_dir (expected a directory for the checkpoints, e.g. --output_dir)");
  if (t.load_best_model_at_end && t.save_strategy == SaveStrategy::No)
    b.fail("load_best_model_at_end", "needs checkpoints to choose from, and training.save_strategy is \"no\" "
                                     "(expected save_strategy steps or best)");
  if (t.load_best_model_at_end && t.save_strategy == SaveStrategy::Steps &&
      (t.save_interval == 0 || t.save_interval % t.eval_interval != 0))
    b.fail("load_best_model_at_end",
           fmt::format("needs a checkpoint at every evaluation that can be the best: training.save_interval {} is not "
                       "a multiple of training.eval_interval {} (expected save_interval a multiple of eval_interval, "
                       "as the Trainer asks, or save_strategy best)",
                       t.save_interval, t.eval_interval));
}

}  // namespace

TrainingConfig read_training(Block& b) {
  TrainingConfig t;
  for (const auto& [trainer_name, key] : trainer_names_of_training_keys()) b.known_as_well(trainer_name);
  const auto positive = NumberRange::positive();
  const auto non_negative = NumberRange::non_negative();
  t.steps = b.integer("steps", t.steps, IntRange::at_least(1));
  t.epochs = b.number("epochs", t.epochs, NumberRange::non_negative());
  const IntRange count = IntRange::between(1, INT32_MAX);  // held in an int by the trainer
  t.micro_batch_size = b.integer("micro_batch_size", t.micro_batch_size, count);
  t.gradient_accumulation_steps = b.integer("gradient_accumulation_steps", t.gradient_accumulation_steps, count);
  t.lr = b.number("lr", t.lr, positive);
  t.adam_beta1 = b.number("adam_beta1", t.adam_beta1, NumberRange::unit_half_open());
  t.adam_beta2 = b.number("adam_beta2", t.adam_beta2, NumberRange::unit_half_open());
  t.adam_epsilon = b.number("adam_epsilon", t.adam_epsilon, positive);
  t.weight_decay = b.number("weight_decay", t.weight_decay, non_negative);
  // transformers 5's warmup_steps: a whole number of steps, or a float in [0, 1) that is a ratio
  // of the steps (TrainingArguments 5 has no warmup_ratio).
  const nlohmann::json* warmup = b.raw("warmup_steps");
  const bool warmup_is_ratio = warmup && warmup->is_number_float() && *warmup >= 0.0 && *warmup < 1.0;
  if (warmup && warmup->is_number_float() && *warmup >= 1.0 &&
      warmup->get<double>() != std::floor(warmup->get<double>()))
    b.reject("warmup_steps", fmt::format("{} is neither a whole number of steps nor a ratio of the steps (expected an "
                                         "integer >= 0, or a float in [0, 1): the ratio)",
                                         show(*warmup)));
  else if (!warmup_is_ratio)
    t.warmup_steps = b.integer("warmup_steps", t.warmup_steps, IntRange::at_least(0));
  t.warmup_ratio = b.number("warmup_ratio", t.warmup_ratio, NumberRange::unit());
  if (warmup_is_ratio && b.present("warmup_ratio"))
    b.fail("warmup_steps", fmt::format("{} is a ratio of the steps, given together with training.warmup_ratio {} "
                                       "(expected one of them)",
                                       show(*warmup), t.warmup_ratio));
  if (warmup_is_ratio) t.warmup_ratio = warmup->get<double>();
  t.lr_scheduler_type = b.choice("lr_scheduler_type", t.lr_scheduler_type, trainer_schedule_names());
  t.lr_scheduler_kwargs = read_schedule_kwargs(b, t.lr_scheduler_type);
  t.max_grad_norm = b.number("max_grad_norm", t.max_grad_norm, non_negative);
  t.logging_steps = b.integer("logging_steps", t.logging_steps, IntRange::at_least(0));
  t.gradient_checkpointing = b.boolean("gradient_checkpointing", t.gradient_checkpointing);
  t.seed = uint64_t(b.integer("seed", int64_t(t.seed), IntRange::at_least(0)));
  t.eval_interval = b.integer("eval_interval", t.eval_interval, IntRange::at_least(0));
  t.eval_strategy = b.choice("eval_strategy", t.eval_strategy, kEvalStrategyNames);
  // The Trainer's eval_strategy steps without eval_steps evaluates every logging_steps.
  if (t.eval_strategy == EvalStrategy::Steps && !b.present("eval_interval") && t.logging_steps > 0)
    t.eval_interval = t.logging_steps;
  t.eval_batches = b.integer("eval_batches", t.eval_batches, IntRange::at_least(0));
  t.sample_every = b.integer("sample_every", t.sample_every, IntRange::at_least(0));
  t.sample_tokens = b.integer("sample_tokens", t.sample_tokens, IntRange::between(1, INT32_MAX));
  t.sample_prompt = b.text("sample_prompt", t.sample_prompt);
  t.sample_tokenizer = b.file_path("sample_tokenizer", t.sample_tokenizer);
  t.save_interval = b.integer("save_interval", t.save_interval, IntRange::at_least(0));
  t.keep_last = b.integer("keep_last", t.keep_last, IntRange::at_least(0));
  t.save_strategy = b.choice("save_strategy", t.save_strategy, kSaveStrategyNames);
  t.metric_for_best_model = b.text("metric_for_best_model", t.metric_for_best_model);
  const std::optional<bool> greater = b.present("greater_is_better")
                                          ? std::optional<bool>(b.boolean("greater_is_better", false))
                                          : std::nullopt;
  t.load_best_model_at_end = b.boolean("load_best_model_at_end", t.load_best_model_at_end);
  t.early_stopping_patience = b.integer("early_stopping_patience", t.early_stopping_patience, IntRange::at_least(0));
  t.early_stopping_threshold =
      b.number("early_stopping_threshold", t.early_stopping_threshold, NumberRange::non_negative());
  t.checkpoint_dir = b.file_path("checkpoint_dir", t.checkpoint_dir);
  t.resume = read_resume(b.text("resume", t.resume.name()));
  t.init_from = b.file_path("init_from", t.init_from);
  t.save_final = b.file_path("save_final", t.save_final);
  t.save_dtype = b.choice("save_dtype", t.save_dtype, kDTypeNames);
  t.log_dir = b.file_path("log_dir", t.log_dir);
  t.metrics = b.file_path("metrics", t.metrics);
  // 0, or a value beyond any run (1e10), means no timeout (comm/op_deadline.hpp).
  t.comm_timeout = b.number("comm_timeout", t.comm_timeout, non_negative);
  t.device = b.choice("device", t.device, kDeviceChoiceNames);
  t.device_memory_limit = b.integer("device_memory_limit", t.device_memory_limit, IntRange::at_least(0));
  t.cuda_graph = b.boolean("cuda_graph", t.cuda_graph);
  t.freeze = b.texts("freeze");
  t.overwrite = b.boolean("overwrite", t.overwrite);
  b.finish();

  if (t.warmup_steps > 0 && t.warmup_ratio > 0)
    b.fail("warmup_ratio", fmt::format("{} given together with training.warmup_steps {} (expected one of them: "
                                       "warmup_steps counts steps, warmup_ratio is a fraction of training.steps)",
                                       t.warmup_ratio, t.warmup_steps));
  read_best(b, t, greater);
  if (t.resume.latest() && t.checkpoint_dir.empty())
    b.fail("resume",
           fmt::format("\"{}\" needs training.checkpoint_dir (expected a checkpoint directory to resume from)",
                       t.resume.name()));
  if (t.save_interval > 0 && t.checkpoint_dir.empty())
    b.fail("save_interval", fmt::format("{} needs training.checkpoint_dir (expected a directory for checkpoints)",
                                        t.save_interval));
  return t;
}

}  // namespace zt::config
