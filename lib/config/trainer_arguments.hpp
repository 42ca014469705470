#pragma once
// The Hugging Face Trainer's command-line names (TrainingArguments' fields as HfArgumentParser
// reads them), TRL's and LLaMA-Factory's names of the LoRA and sequence settings, and the config
// keys they set: the one table from which the command line makes its options
// (app/zerotrain/train_command.cpp) and from which the training block takes the Trainer's names of
// its keys (training.learning_rate is training.lr). Trainer arguments that change nothing here are
// accepted with a warning that says why.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace zt::config {

enum class TrainerValue {
  Value,         // a value, read as --set reads one (JSON when it parses, else a string)
  Switch,        // a bool as HfArgumentParser reads it: alone true; or true/false, yes/no, 1/0
  OptionalPath,  // resume_from_checkpoint: a checkpoint, or alone (or true) the latest one
  List,          // one value or more (--report_to tensorboard wandb), or a comma-separated list
};

// The tool whose command line an argument comes from: a near miss is told the arguments of its
// own family first (--lora_rnk: --lora_rank, not --local_rank).
enum class ArgumentFamily { Trainer, Trl, LlamaFactory };

struct TrainerArgument {
  const char* name;  // --name, and --name-with-dashes as HfArgumentParser also takes it
  const char* key;   // the config key it sets; "model" for --model; "" for output_dir (three keys)
  TrainerValue value;
  const char* help;
  std::vector<std::string> hints = {};  // spellings that are no option but get a did-you-mean to it
  const char* short_name = "";  // another name the option answers to (argparse takes unique prefixes)
  ArgumentFamily family = ArgumentFamily::Trainer;
};
const std::vector<TrainerArgument>& trainer_arguments();

struct IgnoredTrainerArgument {
  const char* name;
  const char* why;  // what zerotrain does instead
};
const std::vector<IgnoredTrainerArgument>& ignored_trainer_arguments();

// The Trainer's names of training keys: {"learning_rate", "lr"}, {"num_train_epochs", "epochs"}, ...
std::vector<std::pair<std::string, std::string>> trainer_names_of_training_keys();

// What --output_dir DIR sets: checkpoints, the metrics file and the final model.
std::string output_dir_checkpoints(const std::string& dir);  // DIR/checkpoints
std::string output_dir_metrics(const std::string& dir);      // DIR/metrics.jsonl

// One Trainer argument as given on the command line; no value: a switch given alone.
struct TrainerArgumentValue {
  std::string name;
  std::optional<std::string> value;
};

// One config value the command line sets, and the option that set it ("--learning_rate 2e-5").
struct CommandLineSetting {
  std::string key;
  nlohmann::json value;
  std::string origin;
  // A default of the tool the option comes from (TRL's lora_r 16 with --use_peft): set only where
  // neither the config nor another option gives the key.
  bool unless_given = false;
};
// The config values a Trainer argument stands for. Throws zt::Error naming the option for a value
// a switch cannot take, or for a name that is not in the table.
std::vector<CommandLineSetting> trainer_argument_settings(const TrainerArgumentValue& given);
// Every config value the arguments set, in the table's order, with what they set together: the
// TensorBoard directory of --report_to tensorboard (--logging_dir, else the Trainer's default
// DIR/runs/<date>_<host> under --output_dir), and the LoRA defaults of the tool whose argument
// asked for LoRA (--use_peft: TRL's; --finetuning_type lora, --lora_rank, --lora_target:
// LLaMA-Factory's). config_has_lora: the config gives a lora block. Throws zt::Error for what
// cannot be honoured (TRL's --lora_r without --use_peft, --finetuning_type freeze, an unknown
// --report_to).
std::vector<CommandLineSetting> command_line_settings(const std::vector<TrainerArgumentValue>& given,
                                                      bool config_has_lora = false);
// "--learning_rate 2e-5 = training.lr 2e-05; --output_dir out = training.checkpoint_dir
// "out/checkpoints", ...": what the arguments set, for the start of a run.
std::string describe_trainer_arguments(const std::vector<TrainerArgumentValue>& given);
// Warnings for what the arguments ask and zerotrain cannot give ("--report_to wandb: ...").
std::vector<std::string> trainer_argument_warnings(const std::vector<TrainerArgumentValue>& given);
// The Trainer's default logging_dir under `output_dir` ("" for none): runs/<Mon DD_HH-MM-SS>_<host>.
std::string default_logging_dir(const std::string& output_dir);
// The warning for an ignored argument as given ("--report_to wandb is ignored: ...").
std::string ignored_argument_note(const TrainerArgumentValue& given);

}  // namespace zt::config
