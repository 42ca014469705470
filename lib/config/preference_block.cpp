// The preference block: preference training (DPO and its family) with TRL's DPOConfig names.
#include "config/blocks.hpp"

namespace zt::config {

PreferenceConfig read_preference(Block& b, bool given) {
  PreferenceConfig p;
  p.enabled = b.boolean("enabled", given);
  p.loss_type = b.choice("loss_type", p.loss_type, {"sigmoid", "robust", "ipo"});
  p.beta = b.number("beta", p.beta, NumberRange::positive());
  p.label_smoothing = b.number("label_smoothing", p.label_smoothing, {0.0, 0.5, false, true});
  p.reference = b.choice("reference", p.reference, {"precompute"});
  b.finish();
  if (p.label_smoothing > 0 && p.loss_type == "sigmoid")
    b.reject("label_smoothing", "applies to loss_type robust (TRL's conservative DPO), not sigmoid");
  return p;
}

}  // namespace zt::config
