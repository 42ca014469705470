#include "config/trainer_arguments.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <filesystem>

#include "config/overrides.hpp"
#include "core/error.hpp"
#include "core/name_table.hpp"

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
      {"warmup_steps", "training.warmup_steps", V::Value,
       "warmup steps, or a float in [0, 1): that ratio of the steps, as transformers 5 (training.warmup_steps)"},
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
      {"save_total_limit", "training.keep_last", V::Value,
       "checkpoints kept: the N newest, and never the best one (training.keep_last)"},
      {"save_strategy", "training.save_strategy", V::Value,
       "steps (every --save_steps), best (at each new best of --metric_for_best_model) or no "
       "(training.save_strategy)"},
      {"eval_steps", "training.eval_interval", V::Value,
       "evaluate every N steps (training.eval_interval); asks for evaluation: without validation data the run "
       "refuses to start"},
      {"eval_strategy", "training.eval_strategy", V::Value,
       "steps (evaluate every --eval_steps; validation data required) or no (training.eval_strategy)", {},
       "evaluation_strategy"},
      {"metric_for_best_model", "training.metric_for_best_model", V::Value,
       "what makes a checkpoint the best: eval_loss (or loss, the same) (training.metric_for_best_model)"},
      {"greater_is_better", "training.greater_is_better", V::Switch,
       "a greater metric is better; default false for a loss (training.greater_is_better)"},
      {"load_best_model_at_end", "training.load_best_model_at_end", V::Switch,
       "the final model is the best checkpoint's (training.load_best_model_at_end)"},
      {"early_stopping_patience", "training.early_stopping_patience", V::Value,
       "stop after N evaluations without improvement, as transformers' EarlyStoppingCallback "
       "(training.early_stopping_patience)"},
      {"early_stopping_threshold", "training.early_stopping_threshold", V::Value,
       "the improvement that counts: more than this (training.early_stopping_threshold)"},
      {"seed", "training.seed", V::Value, "seed of the weights and the data order (training.seed)"},
      {"ddp_timeout", "training.comm_timeout", V::Value, "seconds a collective may take (training.comm_timeout)"},
      {"report_to", "", V::List,
       "tensorboard (or all): TensorBoard events in --logging_dir; none: only training.metrics. Other "
       "integrations are not available here"},
      {"logging_dir", "", V::Value,
       "the TensorBoard directory (tensorboard.output_path and job_name); default DIR/runs/<date>_<host> under "
       "--output_dir, as the Trainer's"},
      // TRL's ModelConfig and SFTConfig.
      {"use_peft", "lora.enabled", V::Switch, "train LoRA adapters (lora.enabled), with TRL's defaults r 16, alpha 32, "
       "dropout 0.05 for what is not given", {}, "", ArgumentFamily::Trl},
      {"lora_r", "lora.r", V::Value, "LoRA rank (lora.r); with --use_peft", {}, "", ArgumentFamily::Trl},
      {"lora_alpha", "lora.alpha", V::Value, "LoRA alpha (lora.alpha)", {}, "", ArgumentFamily::Trl},
      {"lora_dropout", "lora.dropout", V::Value, "LoRA dropout (lora.dropout)", {}, "", ArgumentFamily::Trl},
      {"lora_target_modules", "lora.target_modules", V::List,
       "modules with adapters, such as q_proj v_proj, or all-linear (lora.target_modules); with --use_peft", {}, "",
       ArgumentFamily::Trl},
      {"packing", "data.packing", V::Switch, "several whole samples to a row (data.packing pack; false: none)", {}, "",
       ArgumentFamily::Trl},
      {"max_length", "data.seq_len", V::Value, "tokens of a row (data.seq_len)", {}, "", ArgumentFamily::Trl},
      // TRL's DPOConfig: preference training.
      {"beta", "preference.beta", V::Value, "DPO's beta (preference.beta); turns preference training on", {}, "",
       ArgumentFamily::Trl},
      {"loss_type", "preference.loss_type", V::Value,
       "sigmoid, robust, ipo, simpo or orpo (preference.loss_type); turns preference training on", {}, "",
       ArgumentFamily::Trl},
      {"label_smoothing", "preference.label_smoothing", V::Value,
       "loss_type robust's share of flipped pairs (preference.label_smoothing)", {}, "", ArgumentFamily::Trl},
      {"simpo_gamma", "preference.simpo_gamma", V::Value, "SimPO's target margin (preference.simpo_gamma)", {}, "",
       ArgumentFamily::Trl},
      {"ref_model", "preference.reference", V::Value,
       "the reference model directory of preference training (preference.reference), as LLaMA-Factory's and "
       "ms-swift's ref_model and TRL's DPOTrainer(ref_model=...)", {}, "",
       ArgumentFamily::LlamaFactory},
      // LLaMA-Factory's finetuning and data arguments.
      {"finetuning_type", "lora.enabled", V::Value,
       "lora (adapters, with LLaMA-Factory's defaults r 8, alpha 2r, dropout 0, all linear modules) or full "
       "(lora.enabled)", {}, "", ArgumentFamily::LlamaFactory},
      {"lora_rank", "lora.r", V::Value, "LoRA rank (lora.r); LoRA as LLaMA-Factory's default finetuning_type", {}, "",
       ArgumentFamily::LlamaFactory},
      {"lora_target", "lora.target_modules", V::Value,
       "modules with adapters, comma-separated, or all (lora.target_modules all-linear)", {}, "",
       ArgumentFamily::LlamaFactory},
      {"cutoff_len", "data.seq_len", V::Value, "tokens of a row (data.seq_len)", {}, "", ArgumentFamily::LlamaFactory},
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
      {"run_name", "a run is known by its metrics file and tensorboard.job_name"},
      {"per_device_eval_batch_size", "evaluation reads windows of per_device_train_batch_size sequences, and the val "
                                     "loss, the mean over every token, does not depend on it"},
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

namespace {

// A list as --report_to and --lora_target take it: values one after another (joined with ',' by
// the parser) or comma-separated.
std::vector<std::string> list_of(const std::string& text) {
  std::vector<std::string> items;
  std::string item;
  for (char c : text + ",") {
    if (c == ',' || std::isspace(static_cast<unsigned char>(c))) {
      if (!item.empty()) items.push_back(item);
      item.clear();
    } else {
      item += c;
    }
  }
  return items;
}

// The integrations the Trainer's report_to names (transformers' integration_utils): none of them
// is available here; tensorboard is zerotrain's own.
const std::vector<std::string>& unavailable_integrations() {
  static const std::vector<std::string> names = {"azure_ml", "clearml", "codecarbon", "comet_ml", "dagshub",
                                                 "dvclive",  "flyte",   "logfire",    "mlflow",   "neptune",
                                                 "swanlab",  "trackio", "wandb"};
  return names;
}

bool contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

// The entries of --report_to that are not another integration's name.
enum class Report { None, All, Tensorboard };
constexpr auto kReportNames =
    name_table<Report>({{Report::None, "none"}, {Report::All, "all"}, {Report::Tensorboard, "tensorboard"}});

// --report_to's entries, checked: tensorboard (or all, the one integration there is) writes events.
bool reports_to_tensorboard(const TrainerArgumentValue& g) {
  const std::vector<std::string> names = list_of(g.value.value_or(""));
  if (names.empty()) fail("--report_to: needs a value (tensorboard, all or none)");
  for (const std::string& n : names) {
    const std::string name = lower(n);
    const std::optional<Report> report = kReportNames.find(name);
    if (report == Report::None && names.size() > 1)
      fail("--report_to {}: none goes alone (expected none, or tensorboard and others)", *g.value);
    if (!report && !contains(unavailable_integrations(), name))
      fail("--report_to {}: {} is not an integration (expected tensorboard, all or none)", *g.value, n);
  }
  return contains(names, "tensorboard") || contains(names, "all");
}

const TrainerArgumentValue* given_argument(const std::vector<TrainerArgumentValue>& given, const std::string& name) {
  auto it = std::find_if(given.begin(), given.end(), [&](const TrainerArgumentValue& g) { return g.name == name; });
  return it == given.end() ? nullptr : &*it;
}

std::string origin_of(const TrainerArgumentValue& g) {
  return g.value ? "--" + g.name + " " + *g.value : "--" + g.name;
}

// The tensorboard monitor writing into `logging_dir`: its <output_path>/<job_name>.
void add_tensorboard_directory(const std::string& logging_dir, const std::string& origin,
                               std::vector<CommandLineSetting>& out) {
  std::filesystem::path dir = std::filesystem::path(logging_dir).lexically_normal();
  if (!dir.has_filename()) dir = dir.parent_path();  // "tb/run1/"
  const std::string parent = dir.parent_path().string();
  out.push_back({"tensorboard.output_path", parent.empty() ? "." : parent, origin});
  out.push_back({"tensorboard.job_name", dir.filename().string(), origin});
}

// --report_to tensorboard: the events in logging_dir; --logging_dir alone moves a config's
// tensorboard block there.
void add_tensorboard(const std::vector<TrainerArgumentValue>& given, std::vector<CommandLineSetting>& out) {
  const TrainerArgumentValue* report_to = given_argument(given, "report_to");
  const TrainerArgumentValue* logging_dir = given_argument(given, "logging_dir");
  if (logging_dir && (!logging_dir->value || logging_dir->value->empty())) fail("--logging_dir: needs a directory");
  if (!report_to || !reports_to_tensorboard(*report_to)) {
    if (logging_dir) add_tensorboard_directory(*logging_dir->value, origin_of(*logging_dir), out);
    return;
  }
  const TrainerArgumentValue* output_dir = given_argument(given, "output_dir");
  const std::string origin = origin_of(*report_to) + (logging_dir ? " " + origin_of(*logging_dir) : "");
  out.push_back({"tensorboard.enabled", true, origin});
  add_tensorboard_directory(
      logging_dir ? *logging_dir->value : default_logging_dir(output_dir ? output_dir->value.value_or("") : ""), origin,
      out);
}

bool is_true(const TrainerArgumentValue* g) { return g && (!g->value || switch_value("--" + g->name, *g->value)); }

// The tools' LoRA settings: TRL trains adapters only with --use_peft; LLaMA-Factory's finetuning_type
// is lora unless it says full. Each tool's defaults fill what is not given.
void add_lora(const std::vector<TrainerArgumentValue>& given, bool config_has_lora,
              std::vector<CommandLineSetting>& out) {
  const TrainerArgumentValue* use_peft = given_argument(given, "use_peft");
  const TrainerArgumentValue* finetuning = given_argument(given, "finetuning_type");
  const bool full = finetuning && lower(finetuning->value.value_or("")) == "full";
  const TrainerArgumentValue* llama_factory = nullptr;  // the first LLaMA-Factory argument that asks for LoRA
  for (const char* name : {"finetuning_type", "lora_rank", "lora_target"})
    if (!llama_factory && !full) llama_factory = given_argument(given, name);
  std::vector<const TrainerArgumentValue*> lora_values;
  for (const char* name : {"lora_r", "lora_alpha", "lora_dropout", "lora_target_modules", "lora_rank", "lora_target"})
    if (const TrainerArgumentValue* g = given_argument(given, name)) lora_values.push_back(g);
  if (full && (!lora_values.empty() || is_true(use_peft)))
    fail("{} trains the whole model, without adapters; {} asks for LoRA (expected one of them)",
         origin_of(*finetuning), origin_of(lora_values.empty() ? *use_peft : *lora_values.front()));
  if (use_peft && !is_true(use_peft) && llama_factory)
    fail("{} trains without adapters; {} asks for LoRA (expected one of them)", origin_of(*use_peft),
         origin_of(*llama_factory));
  if (!use_peft && !llama_factory && !full && !lora_values.empty() && !config_has_lora)
    fail("{}: LoRA settings without LoRA (TRL trains the whole model unless --use_peft is given; expected "
         "--use_peft, --finetuning_type lora or a lora block)",
         origin_of(*lora_values.front()));
  if (is_true(use_peft)) {
    const std::string origin = origin_of(*use_peft) + " (TRL's default)";
    out.push_back({"lora.r", 16, origin, true});
    out.push_back({"lora.alpha", 32, origin, true});
    out.push_back({"lora.dropout", 0.05, origin, true});
  } else if (llama_factory) {
    const std::string origin = origin_of(*llama_factory) + " (LLaMA-Factory's default)";
    out.push_back({"lora.enabled", true, origin, true});
    int64_t rank = 8;
    if (const TrainerArgumentValue* r = given_argument(given, "lora_rank")) {
      const nlohmann::json v = parse_option_value(r->value.value_or(""), origin_of(*r));
      if (v.is_number_integer()) rank = v.get<int64_t>();
    } else {
      out.push_back({"lora.r", rank, origin, true});
    }
    out.push_back({"lora.alpha", 2 * rank, origin, true});
    out.push_back({"lora.dropout", 0.0, origin, true});
    out.push_back({"lora.target_modules", nlohmann::json::array({"all-linear"}), origin, true});
  }
}

}  // namespace

std::string default_logging_dir(const std::string& output_dir) {
  // transformers' default_logdir(): runs/<local time as %b%d_%H-%M-%S>_<hostname>
  char stamp[64] = "";
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  std::strftime(stamp, sizeof stamp, "%b%d_%H-%M-%S", &local);
  char host[256] = "";
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  const std::string runs = std::string("runs/") + stamp + "_" + host;
  return output_dir.empty() ? runs : joined(output_dir, runs.c_str());
}

std::vector<CommandLineSetting> trainer_argument_settings(const TrainerArgumentValue& given) {
  const TrainerArgument* a = find_argument(given.name);
  if (!a || std::string(a->key) == "model")
    fail("--{}: not a Hugging Face Trainer argument zerotrain maps", given.name);
  const std::string option = "--" + given.name;
  const std::string origin = origin_of(given);
  const std::string name = a->name;
  if (name == "packing")  // TRL's packing: whole samples to a row, else one sample a row
    return {{a->key, !given.value || switch_value(option, *given.value) ? "pack" : "none", origin}};
  if (a->value == TrainerValue::Switch) return {{a->key, !given.value || switch_value(option, *given.value), origin}};
  if (a->value == TrainerValue::OptionalPath) {
    // alone or true: the latest checkpoint; false: none (HfArgumentParser would read both as paths)
    const std::string v = given.value ? *given.value : "true";
    const std::string word = lower(v);
    return {{a->key, word == "true" ? "latest" : word == "false" ? "none" : v, origin}};
  }
  if (!given.value) fail("{}: needs a value", option);
  const std::string& text = *given.value;
  if (name == "output_dir") {
    return {{"training.checkpoint_dir", output_dir_checkpoints(text), origin},
            {"training.metrics", output_dir_metrics(text), origin},
            {"training.save_final", text, origin}};
  }
  if (name == "report_to" || name == "logging_dir") return {};  // with the others: command_line_settings
  if (name == "max_steps" && text == "-1") return {};  // the Trainer's "not given"
  if ((name == "eval_strategy" || name == "save_strategy") && lower(text) == "epoch")
    fail("{}: zerotrain counts in steps (expected steps, with --{} N{})", origin,
         name == "eval_strategy" ? "eval_steps" : "save_steps", name == "save_strategy" ? ", best or no" : ", or no");
  if (name == "eval_steps") {  // asks for evaluation (0: none), unless --eval_strategy says otherwise
    const nlohmann::json steps = parse_option_value(text, origin);
    if (steps == 0) return {{a->key, steps, origin}};
    return {{a->key, steps, origin}, {"training.eval_strategy", "steps", origin, true}};
  }
  if (name == "finetuning_type") {
    const std::string type = lower(text);
    if (type == "freeze")
      fail("{}: LLaMA-Factory's freeze tuning (its last layers train) is not available here (expected lora or full; "
           "training.freeze names the parameters that do not train, docs/models.md)",
           origin);
    if (type != "lora" && type != "full") fail("{}: expected lora or full", origin);
    return {{a->key, type == "lora", origin}};
  }
  if (name == "lora_target_modules" || name == "lora_target") {
    nlohmann::json modules = nlohmann::json::array();
    for (const std::string& m : list_of(text))
      modules.push_back(name == "lora_target" && m == "all" ? "all-linear" : m);
    if (modules.empty()) fail("{}: needs module names", option);
    return {{a->key, modules, origin}};
  }
  return {{a->key, parse_option_value(text, origin), origin}};
}

std::vector<CommandLineSetting> command_line_settings(const std::vector<TrainerArgumentValue>& given,
                                                      bool config_has_lora) {
  // Two tools' names of one setting (--lora_r and --lora_rank, --max_length and --cutoff_len).
  for (auto a = given.begin(); a != given.end(); ++a)
    for (auto b = a + 1; b != given.end(); ++b) {
      const TrainerArgument *x = find_argument(a->name), *y = find_argument(b->name);
      if (x && y && *x->key && std::string(x->key) == y->key)
        fail("--{} and --{} both give {} (expected one of them)", a->name, b->name, x->key);
    }
  std::vector<CommandLineSetting> out;
  for (const TrainerArgumentValue& g : given)
    for (CommandLineSetting& s : trainer_argument_settings(g)) out.push_back(std::move(s));
  add_tensorboard(given, out);
  add_lora(given, config_has_lora, out);
  return out;
}

std::string describe_trainer_arguments(const std::vector<TrainerArgumentValue>& given) {
  std::string text, origin;
  for (const CommandLineSetting& s : command_line_settings(given, true)) {
    const std::string value = s.value.dump() + (s.unless_given ? " unless given" : "");
    if (s.origin == origin) {
      text += fmt::format(", {} {}", s.key, value);
      continue;
    }
    origin = s.origin;
    text += fmt::format("{}{} = {} {}", text.empty() ? "" : "; ", s.origin, s.key, value);
  }
  return text;
}

std::vector<std::string> trainer_argument_warnings(const std::vector<TrainerArgumentValue>& given) {
  std::vector<std::string> notes;
  const TrainerArgumentValue* report_to = given_argument(given, "report_to");
  if (!report_to) return notes;
  for (const std::string& n : list_of(report_to->value.value_or("")))
    if (contains(unavailable_integrations(), lower(n)))
      notes.push_back(fmt::format("--report_to {}: {} is not available here (nothing is sent anywhere); the metrics "
                                  "go to training.metrics{}",
                                  *report_to->value, n,
                                  reports_to_tensorboard(*report_to) ? " and TensorBoard" : ""));
  return notes;
}

std::string ignored_argument_note(const TrainerArgumentValue& given) {
  const auto& table = ignored_trainer_arguments();
  auto it = std::find_if(table.begin(), table.end(), [&](const auto& a) { return given.name == a.name; });
  const char* why = it == table.end() ? "zerotrain has no such setting" : it->why;
  return fmt::format("--{}{} is ignored: {}", given.name, given.value ? " " + *given.value : "", why);
}

}  // namespace zt::config
