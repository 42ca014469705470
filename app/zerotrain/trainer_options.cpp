#include "trainer_options.hpp"

#include "core/error.hpp"

namespace zt::cli {

namespace {

const char* const kGroup = "Hugging Face Trainer arguments";

const char* group_of(config::ArgumentFamily family) {
  switch (family) {
    case config::ArgumentFamily::Trl: return "TRL's arguments (LoRA and SFT)";
    case config::ArgumentFamily::LlamaFactory: return "LLaMA-Factory's arguments";
    case config::ArgumentFamily::Trainer: break;
  }
  return kGroup;
}

}  // namespace

std::string trainer_option_names(const std::string& name) {
  std::string dashed = name;
  for (char& c : dashed)
    if (c == '_') c = '-';
  return dashed == name ? "--" + name : "--" + name + ",--" + dashed;
}

TrainerOptions::TrainerOptions(CLI::App& app, CLI::Option* steps, CLI::Option* model)
    : our_steps_(steps), our_model_(model) {
  for (const config::TrainerArgument& a : config::trainer_arguments()) {
    std::string names = trainer_option_names(a.name);
    if (*a.short_name) names += ",--" + std::string(a.short_name);
    auto value = std::make_shared<std::string>();
    CLI::Option* o = app.add_option(names, *value, a.help)->group(group_of(a.family));
    if (a.value == config::TrainerValue::Switch || a.value == config::TrainerValue::OptionalPath) o->expected(0, 1);
    if (a.value == config::TrainerValue::List)
      o->expected(1, CLI::detail::expected_max_vector_size)->allow_extra_args()->join(',');
    o->type_name(a.value == config::TrainerValue::Switch         ? "[BOOL]"
                 : a.value == config::TrainerValue::OptionalPath ? "[PATH]"
                                                                 : "VALUE");
    if (std::string(a.key) == "model") {
      model_ = o;
      model_value_ = value;
      continue;
    }
    if (std::string(a.name) == "max_steps") max_steps_ = o;
    mapped_.push_back({a.name, o, value});
  }
  // Hidden from --help (the footer names them): accepted, and a warning says why they change nothing.
  for (const config::IgnoredTrainerArgument& a : config::ignored_trainer_arguments()) {
    auto value = std::make_shared<std::string>();
    ignored_.push_back(
        {a.name, app.add_option(trainer_option_names(a.name), *value)->expected(0, 1)->group(""), value});
  }
}

config::TrainerArgumentValue TrainerOptions::value_of(const Given& g) {
  config::TrainerArgumentValue v{g.name, std::nullopt};
  if (!g.option->results().empty() && !g.option->results().front().empty()) v.value = *g.value;
  return v;
}

std::vector<config::TrainerArgumentValue> TrainerOptions::mapped() const {
  std::vector<config::TrainerArgumentValue> given;
  for (const Given& g : mapped_)
    if (g.option->count() > 0) given.push_back(value_of(g));
  return given;
}

std::string TrainerOptions::model() const { return *model_value_; }

std::vector<std::string> TrainerOptions::ignored_notes() const {
  std::vector<std::string> notes;
  for (const Given& g : ignored_)
    if (g.option->count() > 0) notes.push_back(config::ignored_argument_note(value_of(g)));
  return notes;
}

void TrainerOptions::check_not_doubled() const {
  if (our_steps_->count() > 0 && max_steps_->count() > 0)
    fail("--steps and --max_steps both give training.steps (expected one of them)");
  if (our_model_->count() > 0 && model_->count() > 0)
    fail("--model and --model_name_or_path both give the model (expected one of them)");
}

}  // namespace zt::cli
