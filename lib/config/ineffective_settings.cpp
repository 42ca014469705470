#include "config/ineffective_settings.hpp"

#include <fmt/format.h>

namespace zt::config {

void warn_ineffective_settings(const Config& c, const Diagnostics& diag) {
  // training.warmup_steps only feeds a scheduler's "auto" warmup_num_steps; without a scheduler
  // block the learning rate is constant, as in DeepSpeed.
  if (c.training.warmup_steps > 0 && c.scheduler.type.empty())
    diag.warn("training.warmup_steps",
              fmt::format("{} has no effect: there is no scheduler block, so the learning rate stays constant. For "
                          "warmup, add a scheduler block whose warmup_num_steps is \"auto\" (it takes "
                          "training.warmup_steps), e.g. \"scheduler\": {{\"type\": \"WarmupDecayLR\", \"params\": "
                          "{{\"warmup_num_steps\": \"auto\", \"total_num_steps\": \"auto\"}}}}",
                          c.training.warmup_steps));
}

}  // namespace zt::config
