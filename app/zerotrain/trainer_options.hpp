#pragma once
// The Hugging Face Trainer's command-line arguments on zerotrain's parser: one option per row of
// config/trainer_arguments.hpp (--learning_rate and --learning-rate, --name value and
// --name=value, switches alone or with true/false), and the Trainer arguments zerotrain accepts
// and ignores with a warning.
#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

#include "config/trainer_arguments.hpp"

namespace zt::cli {

class TrainerOptions {
public:
  // Adds the options to `app`; `steps` and `model` are zerotrain's own --steps and --model, which
  // --max_steps and --model_name_or_path may not be given with.
  TrainerOptions(CLI::App& app, CLI::Option* steps, CLI::Option* model);

  // The mapped arguments as given, in the table's order (--model_name_or_path is model() instead).
  std::vector<config::TrainerArgumentValue> mapped() const;
  // --model_name_or_path's value, or "".
  std::string model() const;
  bool model_given() const { return model_->count() > 0; }
  // One warning per ignored argument given ("--report_to wandb is ignored: ...").
  std::vector<std::string> ignored_notes() const;
  // Throws zt::Error for two options that set one key (--steps and --max_steps).
  void check_not_doubled() const;

private:
  struct Given {
    const char* name;
    CLI::Option* option;
    std::shared_ptr<std::string> value;
  };
  static config::TrainerArgumentValue value_of(const Given& g);

  std::vector<Given> mapped_, ignored_;
  CLI::Option *model_ = nullptr, *our_steps_ = nullptr, *our_model_ = nullptr, *max_steps_ = nullptr;
  std::shared_ptr<std::string> model_value_ = std::make_shared<std::string>();
};

// "--name,--name-with-dashes" for a Trainer name.
std::string trainer_option_names(const std::string& name);

}  // namespace zt::cli
