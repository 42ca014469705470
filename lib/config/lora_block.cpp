// The lora block: LoRA adapters with PEFT's LoraConfig keys, and what of a model trains.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <climits>

#include "config/blocks.hpp"

namespace zt::config {

LoraConfig read_lora(Block& b, const ModelConfig& model, bool given) {
  LoraConfig l;
  l.enabled = b.boolean("enabled", given);
  b.rename("lora_alpha", "alpha", "PEFT's name; zerotrain's lora block says alpha");
  b.rename("lora_dropout", "dropout", "PEFT's name; zerotrain's lora block says dropout");
  l.r = b.integer("r", l.r, IntRange::between(1, INT32_MAX));
  l.alpha = b.number("alpha", l.alpha, NumberRange::positive());
  l.dropout = b.number("dropout", l.dropout, NumberRange::unit_half_open());
  l.target_modules = b.texts("target_modules");
  l.use_rslora = b.boolean("use_rslora", l.use_rslora);
  l.init_from = b.file_path("init_from", l.init_from);
  l.save_merged = b.boolean("save_merged", l.save_merged);
  b.finish();
  const std::vector<std::string> names = lora_site_names(model.shape.model_type);
  for (size_t i = 0; i < l.target_modules.size(); ++i) {
    const std::string& t = l.target_modules[i];
    if (t != "all-linear" && std::find(names.begin(), names.end(), t) == names.end())
      b.reject(fmt::format("target_modules[{}]", i),
               fmt::format("\"{}\" is not a projection of a {} block (expected some of {}, or \"all-linear\")", t,
                           kModelTypeNames.name(model.shape.model_type), fmt::join(names, ", ")));
  }
  if (l.target_modules.empty()) l.target_modules = default_lora_targets(model.shape.model_type);
  return l;
}

TrainedParts trained_parts(const Config& c) {
  TrainedParts parts;
  parts.freeze = c.training.freeze;
  parts.keep_fp32 = c.keep_in_fp32_modules;
  if (c.lora.enabled)
    parts.lora = LoraSpec{int(c.lora.r), c.lora.alpha, c.lora.dropout, c.lora.use_rslora, c.lora.target_modules};
  return parts;
}

}  // namespace zt::config
