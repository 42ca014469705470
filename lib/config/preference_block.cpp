// The preference block: preference training (DPO and its family) with TRL's DPOConfig names.
#include <fmt/format.h>

#include <optional>

#include "config/blocks.hpp"

namespace zt::config {

namespace {

// TRL 1.16's loss_type as a list, with loss_weights: one preference loss (weight 1) and "sft" beside
// it, whose weight is rpo_alpha. Returns the weight of sft (0 without it).
double read_loss_list(Block& b, const nlohmann::json& names, PreferenceConfig& p) {
  const nlohmann::json* weights = b.raw("loss_weights");
  if (weights && (!weights->is_array() || weights->size() != names.size()))
    b.fail("loss_weights", fmt::format("expected a list of {} numbers, one for each of loss_type's", names.size()));
  std::optional<PreferenceLoss> loss;
  double sft = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string name = names[i].is_string() ? names[i].get<std::string>() : names[i].dump();
    const nlohmann::json& w = weights ? weights->at(i) : nlohmann::json(1.0);
    if (!w.is_number() || w.get<double>() < 0)
      b.fail("loss_weights", fmt::format("{} is not a weight (expected a number >= 0)", w.dump()));
    if (name == "sft") {
      sft = w.get<double>();
    } else if (const auto l = kPreferenceLossNames.find(name); !l) {
      b.fail("loss_type", fmt::format("\"{}\" is not valid (expected {}, or sft beside one of them)", name,
                                      kPreferenceLossNames.list()));
    } else if (loss) {
      b.fail("loss_type", fmt::format("{} and {}: one preference loss at a time (sft may go beside it)",
                                      kPreferenceLossNames.name(*loss), name));
    } else if (w.get<double>() != 1.0) {
      b.fail("loss_weights", fmt::format("{}'s weight is {}: the preference loss weighs 1 (only sft's weight, "
                                         "rpo_alpha, may differ)",
                                         name, w.dump()));
    } else {
      loss = l;
    }
  }
  if (!loss) b.fail("loss_type", "sft needs a preference loss beside it (such as [\"sigmoid\", \"sft\"])");
  p.loss_type = *loss;
  return sft;
}

}  // namespace

PreferenceConfig read_preference(Block& b, bool given, bool lora) {
  PreferenceConfig p;
  p.enabled = b.boolean("enabled", given);
  const nlohmann::json* losses = b.raw("loss_type");
  const double sft = losses && losses->is_array() ? read_loss_list(b, *losses, p) : 0.0;
  if (!losses || !losses->is_array()) {
    if (b.present("loss_weights"))
      b.fail("loss_weights", "weighs the losses of a list loss_type (such as [\"sigmoid\", \"sft\"])");
    p.loss_type = b.choice("loss_type", p.loss_type, kPreferenceLossNames);
  }
  p.beta = b.number("beta", p.beta, NumberRange::positive());
  p.label_smoothing = b.number("label_smoothing", p.label_smoothing, {0.0, 0.5, false, true});
  if (sft > 0 && b.present("rpo_alpha"))
    b.fail("rpo_alpha", "given twice: as rpo_alpha and as loss_type sft's weight in loss_weights");
  p.rpo_alpha = b.number("rpo_alpha", sft, NumberRange::non_negative());
  const bool gamma = b.present("simpo_gamma");
  p.simpo_gamma = b.number("simpo_gamma", p.simpo_gamma, NumberRange::non_negative());
  const bool reference = b.present("reference");
  p.reference = b.choice("reference", p.reference, {"precompute", "adapters_off"});
  b.finish();
  const std::string_view loss = kPreferenceLossNames.name(p.loss_type);
  if (p.label_smoothing > 0 && p.loss_type != PreferenceLoss::Robust)
    b.reject("label_smoothing",
             fmt::format("applies to loss_type robust (TRL's conservative DPO), not {}", loss));
  if (gamma && p.loss_type != PreferenceLoss::Simpo)
    b.reject("simpo_gamma", fmt::format("applies to loss_type simpo, not {}", loss));
  if (p.rpo_alpha > 0 && p.loss_type == PreferenceLoss::Orpo)
    b.reject(b.present("rpo_alpha") ? "rpo_alpha" : "loss_type",
             "loss_type orpo has its own NLL term (of the whole chosen sequence): no sft term goes beside it");
  if (reference && !p.has_reference())
    b.reject("reference", fmt::format("loss_type {} compares against no reference", loss));
  if (p.reference == "adapters_off" && !lora)
    b.reject("reference", "adapters_off needs LoRA adapters (a lora block) to turn off");
  return p;
}

}  // namespace zt::config
