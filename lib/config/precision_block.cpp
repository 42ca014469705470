// fp16 and bf16 blocks, the "auto" precision choice, and communication_data_type.
#include <fmt/format.h>

#include "config/blocks.hpp"

namespace zt::config {

namespace {

enum class Enabled { Absent, No, Yes, Auto };

Enabled read_enabled(Block& b) {
  if (b.is_auto("enabled")) {
    b.raw("enabled");
    return Enabled::Auto;
  }
  auto v = b.raw("enabled");
  if (!v) return Enabled::Absent;
  if (!v->is_boolean())
    b.fail("enabled", fmt::format("{} is not a boolean (expected true, false or \"auto\")", show(*v)));
  return v->get<bool>() ? Enabled::Yes : Enabled::No;
}

}  // namespace

void read_precision(Block& top, const AutoValues& av, Config& c) {
  top.rename("bfloat16", "bf16", "deprecated spelling of bf16; read as bf16");

  Block fp16 = top.child("fp16", UnknownKeys::Error);
  const Enabled fp16_enabled = read_enabled(fp16);
  Fp16Config& f = c.fp16;
  f.loss_scale = fp16.number("loss_scale", f.loss_scale, NumberRange::non_negative());
  f.initial_scale_power = int(fp16.integer("initial_scale_power", f.initial_scale_power, IntRange::between(0, 127)));
  f.loss_scale_window = fp16.integer("loss_scale_window", f.loss_scale_window, IntRange::at_least(1));
  f.hysteresis = int(fp16.integer("hysteresis", f.hysteresis, IntRange::between(1, 1 << 30)));
  f.consecutive_hysteresis = fp16.boolean("consecutive_hysteresis", f.consecutive_hysteresis);
  f.min_loss_scale = fp16.number("min_loss_scale", f.min_loss_scale, NumberRange::positive());
  fp16.unimplemented("auto_cast", false);
  fp16.unimplemented("fp16_master_weights_and_grads", false);
  fp16.finish();

  Block bf16 = top.child("bf16", UnknownKeys::Error);
  const Enabled bf16_enabled = read_enabled(bf16);
  c.bf16.check_grad_overflow = bf16.boolean("check_grad_overflow", c.bf16.check_grad_overflow);
  bf16.unimplemented("immediate_grad_update", true);
  bf16.unimplemented("bf16_master_weights_and_grads", false);
  bf16.unimplemented("bf16_optimizer_states", false);
  bf16.finish();

  if (fp16_enabled == Enabled::Yes && bf16_enabled == Enabled::Yes)
    fp16.fail("enabled", "true together with bf16.enabled true (expected at most one of fp16 and bf16)");
  // An explicit choice wins. "auto" is what the Hugging Face Trainer makes of it: fp16's follows the
  // Trainer's --fp16 and bf16's its --bf16. zerotrain, as that trainer, asks for bf16 where the
  // device has it and never for fp16, so fp16 "auto" alone trains in fp32.
  if (fp16_enabled == Enabled::Yes) {
    f.enabled = true;
  } else if (bf16_enabled == Enabled::Yes) {
    c.bf16.enabled = true;
  } else if (bf16_enabled == Enabled::Auto) {
    c.bf16.enabled = av.bf16;
  }
  c.communication_data_type = top.choice("communication_data_type", c.dtype(), {"fp32", "fp16", "bf16"});
}

}  // namespace zt::config
