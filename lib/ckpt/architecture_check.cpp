#include "ckpt/architecture_check.hpp"

#include <spdlog/spdlog.h>

#include "core/error.hpp"

namespace zt {

namespace {

std::string shown(const nlohmann::json& block, const std::string& key) {
  return block.contains(key) ? block.at(key).dump() : "(absent)";
}

}  // namespace

void check_checkpoint_model_type(const std::string& step_dir, const CheckpointMeta& saved,
                                 const nlohmann::json& model_block, bool weights_only) {
  const nlohmann::json& was = saved.model;
  const std::string type_was = was.value("model_type", std::string("gpt2"));
  const std::string type_now = model_block.value("model_type", std::string("gpt2"));
  if (type_was != type_now)
    fail("{}: holds a {} model and this run builds a {} model (model.model_type): a checkpoint {} only the "
         "architecture that saved it",
         step_dir, type_was, type_now, weights_only ? "initialises" : "resumes");
}

void check_checkpoint_architecture(const std::string& step_dir, const CheckpointMeta& saved,
                                   const nlohmann::json& model_block, bool weights_only) {
  check_checkpoint_model_type(step_dir, saved, model_block, weights_only);
  const nlohmann::json& was = saved.model;
  nlohmann::json keys = nlohmann::json::object();
  for (const auto* block : {&was, &model_block})
    for (auto& [key, value] : block->items()) keys[key] = true;
  for (auto& [key, unused] : keys.items()) {
    if (key == "preset" || key == "max_seq_len") continue;
    // A key a checkpoint saved before it existed (absent) is one left at null.
    const bool same = was.value(key, nlohmann::json()) == model_block.value(key, nlohmann::json());
    if (same) continue;
    if (!weights_only)
      fail("{}: saved by a run with model.{} {} and this run has {}: resuming continues the same model (a run "
           "with another architecture starts from its weights with training.init_from)",
           step_dir, key, shown(was, key), shown(model_block, key));
    spdlog::info("training.init_from {}: saved with model.{} {}; this run has {}", step_dir, key, shown(was, key),
                 shown(model_block, key));
  }
}

}  // namespace zt
