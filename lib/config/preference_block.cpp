// The preference block: preference training (DPO and its family) with TRL's DPOConfig names.
#include <fmt/format.h>

#include "config/blocks.hpp"

namespace zt::config {

PreferenceConfig read_preference(Block& b, bool given, bool lora) {
  PreferenceConfig p;
  p.enabled = b.boolean("enabled", given);
  p.loss_type = b.choice("loss_type", p.loss_type, kPreferenceLossNames);
  p.beta = b.number("beta", p.beta, NumberRange::positive());
  p.label_smoothing = b.number("label_smoothing", p.label_smoothing, {0.0, 0.5, false, true});
  p.rpo_alpha = b.number("rpo_alpha", p.rpo_alpha, NumberRange::non_negative());
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
  if (reference && !p.has_reference())
    b.reject("reference", fmt::format("loss_type {} compares against no reference", loss));
  if (p.reference == "adapters_off" && !lora)
    b.reject("reference", "adapters_off needs LoRA adapters (a lora block) to turn off");
  return p;
}

}  // namespace zt::config
