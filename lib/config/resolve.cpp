// From raw JSON and the command line to the resolved Config: overrides first, then each block in
// dependency order (training and model feed "auto"), then the verdict on unknown top-level keys and
// on training keys that their DeepSpeed keys overrule; every error found on the way, reported together.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <set>

#include "config/auto_values.hpp"
#include "config/blocks.hpp"
#include "config/config.hpp"
#include "config/config_search.hpp"
#include "core/json_file.hpp"
#include "config/model_block.hpp"
#include "config/overrides.hpp"
#include "config/provenance.hpp"
#include "config/training_length.hpp"
#include "config/unused_shorthands.hpp"
#include "config/value_sources.hpp"
#include "core/error.hpp"

namespace zt::config {

namespace {

// The dotted `key` ("lora.r") has a value in `raw`.
bool has_key(const nlohmann::json& raw, const std::string& key) {
  std::string pointer = "/" + key;
  std::replace(pointer.begin(), pointer.end(), '.', '/');
  return raw.contains(nlohmann::json::json_pointer(pointer));
}

// --model, --data, --steps and the Hugging Face Trainer's arguments (--learning_rate, ...) become
// the keys they stand for; --set is applied after them, in order.
// Each key set here is recorded with its option, so that messages about it name the option.
// Returns the config.json of model.path as read (null: none).
nlohmann::ordered_json apply_command_line(nlohmann::json& raw, const ResolveOptions& o, ValueOrigins& origins) {
  auto block = [&raw](const char* key) -> nlohmann::json& {
    nlohmann::json& b = raw[key];
    if (b.is_null()) b = nlohmann::json::object();
    if (!b.is_object()) fail("{}: {} is not an object, cannot apply the command line to it", key, show(b));
    return b;
  };
  if (o.model) {
    raw["model"] = model_argument(*o.model);
    origins.set("model", o.model_option + " " + *o.model);
  }
  if (o.data) {
    block("data")["train"] = *o.data;
    origins.set("data.train", "--data " + *o.data);
  }
  if (o.steps) {
    block("training")["steps"] = *o.steps;
    origins.set("training.steps", fmt::format("--steps {}", *o.steps));
  }
  const auto settings = command_line_settings(o.trainer_arguments, raw.contains("lora"));
  for (const CommandLineSetting& s : settings)
    if (!s.unless_given) set_value(raw, s.key, s.value, s.origin, &origins);
  for (const CommandLineSetting& s : settings)
    if (s.unless_given && !has_key(raw, s.key)) set_value(raw, s.key, s.value, s.origin, &origins);
  for (const auto& assignment : o.overrides) apply_override(raw, assignment, &origins);
  // model.path: config.json gives the keys that neither the config nor the command line set.
  return raw.contains("model") ? expand_model_path(raw["model"], &origins) : nullptr;
}

// Runs the readers of the blocks, collecting their errors so that all of a config's errors are
// reported together. An error about one value (Block::reject) never stops a reader: it goes on with
// the key's default. An error about how values relate (thrown) ends its reader, and is kept only
// when the values it relates were read without error: after an error a value is a default, and a
// rule broken by that default says nothing about the config.
class Readers {
public:
  explicit Readers(ErrorList& errors) : errors_(errors) {}

  // `name` reads its block; `inputs` are the readers whose results it uses.
  template <typename Read>
  void run(const std::string& name, std::initializer_list<const char*> inputs, Read&& read) {
    const size_t before = errors_.size();
    try {
      read();
    } catch (const Error& e) {
      bool inputs_failed = errors_.size() > before;
      for (const char* input : inputs) inputs_failed = inputs_failed || failed_.count(input);
      if (!inputs_failed) errors_.add(e.what());
      failed_.insert(name);
    }
    if (errors_.size() > before) failed_.insert(name);
  }

  // Every one of `names` read its block without error.
  bool succeeded(std::initializer_list<const char*> names) const {
    for (const char* name : names)
      if (failed_.count(name)) return false;
    return true;
  }

private:
  ErrorList& errors_;
  std::set<std::string> failed_;
};

}  // namespace

Config resolve_config(const nlohmann::json& raw_config, const ResolveOptions& options, const std::string& source) {
  auto origins = std::make_shared<ValueOrigins>();
  auto errors = std::make_shared<ErrorList>();
  const Diagnostics diag{source, origins, errors};
  if (!raw_config.is_object())
    diag.fail("", show(raw_config) + " is not a JSON object (expected a DeepSpeed config {...})");
  if (options.world_size < 1) fail("world size {} is invalid (expected >= 1)", options.world_size);
  nlohmann::json raw = raw_config;
  nlohmann::ordered_json hf_config = apply_command_line(raw, options, *origins);
  take_trainer_names(raw, diag);

  Config c;
  c.world_size = options.world_size;
  c.source = source;
  if (options.model) c.model_file = model_file(*options.model).value_or("");
  Block top(diag, "", &raw, UnknownKeys::Warn);
  Readers readers(*errors);
  readers.run("training", {}, [&] {
    Block b = top.child("training", UnknownKeys::Error);
    c.training = read_training(b);
  });
  readers.run("model", {}, [&] {
    Block b = top.child("model", UnknownKeys::Error);
    c.model = read_model(b);
    c.model.hf_config = std::move(hf_config);
  });
  readers.run("data", {"model"}, [&] {
    Block b = top.child("data", UnknownKeys::Error);
    c.data = read_data(b, c.model);
  });
  readers.run("lora", {"model"}, [&] {
    const bool given = top.present("lora");
    Block b = top.child("lora", UnknownKeys::Error);
    c.lora = read_lora(b, c.model, given);
  });
  readers.run("preference", {"lora", "model"}, [&] {
    const bool given = top.present("preference");
    Block b = top.child("preference", UnknownKeys::Error);
    c.preference = read_preference(b, given, c.lora.enabled, c.model);
  });
  // TRL's DPOConfig: a learning rate of 1e-6 where none is given.
  readers.run("preference lr", {"training", "preference"}, [&] {
    if (c.preference.enabled && !has_key(raw, "training.lr")) c.training.lr = kPreferenceLearningRate;
  });
  readers.run("data_types", {"model"}, [&] { read_data_types(top, c.model, c); });
  // The patterns of training.freeze and data_types.keep_in_fp32_modules against the model's names,
  // and what is left to train.
  readers.run("trained parts", {"model", "training", "lora", "data_types"}, [&] {
    try {
      make_training_layout(c.model.shape, trained_parts(c));
    } catch (const TrainedPartsError& e) {
      diag.fail(e.key, e.reason);
    }
  });
  // Evaluation asked for needs something to evaluate.
  readers.run("evaluation", {"training", "data"}, [&] {
    const std::string asked_by = c.training.evaluation_asked_by();
    if (!asked_by.empty() && c.data.val.empty())
      diag.fail("training." + asked_by,
                "asks for evaluation, and there is no validation data: data.val is empty, and no X.val.bin lies "
                "beside data.train X.bin (expected --set data.val=FILE, or a token file X.bin from zerotrain "
                "tokenize --val N%, which writes X.val.bin beside it)");
  });
  const ValueSources sources(raw, *origins);
  AutoValues av = auto_values(c.training, c.model, options);
  readers.run("batch", {"training"}, [&] { read_top_level_scalars(top, av, c); });
  std::string length, weights;
  readers.run("weights", {"training", "model"}, [&] { weights = resolve_initial_weights(c, sources); });
  readers.run("length", {"training", "data", "batch"}, [&] {
    const std::optional<ResumedPosition> resumed =
        options.resumed_position ? options.resumed_position(c.training) : std::nullopt;
    length = resolve_training_length(c, sources, diag, resumed);
    av = auto_values(c.training, c.model, options);  // "auto" total and warmup steps follow the length
  });
  readers.run("precision", {}, [&] { read_precision(top, av, c); });
  readers.run("optimizer", {"training"}, [&] { c.optimizer = read_optimizer(top, av); });
  readers.run("scheduler", {"training", "optimizer"},
              [&] { c.scheduler = read_scheduler(top, av, c.training, c.optimizer.lr); });
  readers.run("zero", {"model"}, [&] { c.zero = read_zero(top, av); });
  readers.run("compute_grad_norm", {"zero", "batch", "training"},
              [&] { apply_compute_grad_norm(c, sources, diag); });
  readers.run("monitors", {}, [&] { read_monitors(top, c); });
  readers.run("checkpoint", {}, [&] { c.checkpoint = read_checkpoint(top); });
  readers.run("activation_checkpointing", {}, [&] { c.activation_checkpointing = read_activation_checkpointing(top); });
  readers.run("aio", {}, [&] { c.aio = read_aio(top); });
  readers.run("expert_parallel", {"model"},
              [&] { c.expert_parallel = read_expert_parallel(top, c.model, c.world_size); });
  // The experts of a rank's place are a second sharding domain, which the engine keeps in memory only.
  readers.run("expert_parallel offload", {"expert_parallel", "zero"}, [&] {
    if (c.expert_parallel.size() < 2) return;
    for (const auto& [key, device] : {std::pair{"offload_optimizer", c.zero.offload_optimizer.device},
                                      std::pair{"offload_param", c.zero.offload_param.device}})
      if (device == OffloadDevice::Nvme)
        diag.fail(fmt::format("zero_optimization.{}.device", key),
                  fmt::format("\"nvme\" with expert_parallel.autoep_size {}: the experts a rank holds are not "
                              "offloaded to files (expected \"cpu\" or \"none\", or expert_parallel.enabled false)",
                              c.expert_parallel.autoep_size));
  });
  readers.run("ignored", {}, [&] { read_ignored_top_level_keys(top); });
  readers.run("unknown keys", {}, [&] { top.finish(); });
  // Its errors are about how keys relate, collected rather than thrown: judged on values read well.
  if (readers.succeeded({"training", "batch", "optimizer", "scheduler"})) check_unused_shorthands(c, sources, diag);
  errors->throw_if_any();
  c.provenance = explain_provenance(c, sources);
  c.provenance.length = length;
  c.provenance.weights = weights;
  settle_shorthands(c);
  return c;
}

Config load_config(const std::string& name_or_path, const ResolveOptions& options) {
  const std::string path = find_config_file(name_or_path);
  return resolve_config(read_json_file(path), options, path);
}

}  // namespace zt::config
