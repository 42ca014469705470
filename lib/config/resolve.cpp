// From raw JSON and the command line to the resolved Config: overrides first, then each block in
// dependency order (training and model feed "auto"), then the verdict on unknown top-level keys.
#include <fmt/format.h>

#include <memory>

#include "config/auto_values.hpp"
#include "config/blocks.hpp"
#include "config/config.hpp"
#include "config/config_search.hpp"
#include "config/ineffective_settings.hpp"
#include "config/json_reader.hpp"
#include "config/model_block.hpp"
#include "config/overrides.hpp"
#include "core/error.hpp"

namespace zt::config {

namespace {

// --model, --data and --steps become the keys they stand for; --set is applied after them, in order.
// Each key set here is recorded with its option, so that messages about it name the option.
void apply_command_line(nlohmann::json& raw, const ResolveOptions& o, ValueOrigins& origins) {
  auto block = [&raw](const char* key) -> nlohmann::json& {
    nlohmann::json& b = raw[key];
    if (b.is_null()) b = nlohmann::json::object();
    if (!b.is_object()) fail("{}: {} is not an object, cannot apply the command line to it", key, show(b));
    return b;
  };
  if (o.model) {
    raw["model"] = model_argument(*o.model);
    origins.set("model", "--model " + *o.model);
  }
  if (o.data) {
    block("data")["train"] = *o.data;
    origins.set("data.train", "--data " + *o.data);
  }
  if (o.steps) {
    block("training")["steps"] = *o.steps;
    origins.set("training.steps", fmt::format("--steps {}", *o.steps));
  }
  for (const auto& assignment : o.overrides) apply_override(raw, assignment, &origins);
}

}  // namespace

Config resolve_config(const nlohmann::json& raw_config, const ResolveOptions& options, const std::string& source) {
  auto origins = std::make_shared<ValueOrigins>();
  const Diagnostics diag{source, origins};
  if (!raw_config.is_object()) diag.fail("", show(raw_config) + " is not a JSON object (expected a DeepSpeed config {...})");
  if (options.world_size < 1) fail("world size {} is invalid (expected >= 1)", options.world_size);
  nlohmann::json raw = raw_config;
  apply_command_line(raw, options, *origins);

  Config c;
  c.world_size = options.world_size;
  c.source = source;
  if (options.model) c.model_file = model_file(*options.model).value_or("");
  Block top(diag, "", &raw, UnknownKeys::Warn);
  {
    Block b = top.child("training", UnknownKeys::Error);
    c.training = read_training(b);
  }
  {
    Block b = top.child("model", UnknownKeys::Error);
    c.model = read_model(b);
  }
  {
    Block b = top.child("data", UnknownKeys::Error);
    c.data = read_data(b, c.model);
  }
  const AutoValues av = auto_values(c.training, c.model, options);
  read_top_level_scalars(top, av, c);
  read_precision(top, av, c);
  c.optimizer = read_optimizer(top, av);
  c.scheduler = read_scheduler(top, av, c.optimizer.lr);
  c.zero = read_zero(top, av);
  read_monitors(top, c);
  c.checkpoint = read_checkpoint(top);
  c.activation_checkpointing = read_activation_checkpointing(top);
  c.aio = read_aio(top);
  read_ignored_top_level_keys(top);
  top.finish();
  warn_ineffective_settings(c, diag);
  return c;
}

Config load_config(const std::string& name_or_path, const ResolveOptions& options) {
  const std::string path = find_config_file(name_or_path);
  return resolve_config(read_json_file(path), options, path);
}

}  // namespace zt::config
