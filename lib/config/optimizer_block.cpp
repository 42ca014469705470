// The optimizer block: Adam and AdamW only; "auto" and missing parameters from the training block.
#include <fmt/format.h>

#include <cctype>

#include "config/blocks.hpp"

namespace zt::config {

const char* const kWeightDecayAppliesTo =
    "parameters with 2 or more dimensions (matrices, embeddings); never biases or norm weights";

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::array<double, 2> read_betas(Block& p, const AutoValues& av) {
  const std::string expected = "two numbers in [0, 1), e.g. [0.9, 0.999]";
  if (p.is_auto("betas")) {
    p.raw("betas");
    return av.betas;
  }
  auto v = p.raw("betas");
  if (!v) return av.betas;
  if (!v->is_array() || v->size() != 2) {
    p.reject("betas", fmt::format("{} is not valid (expected {})", show(*v), expected));
    return av.betas;
  }
  std::array<double, 2> betas = av.betas;
  for (size_t i = 0; i < 2; ++i) {
    const auto& x = (*v)[i];
    const std::string where = fmt::format("betas[{}]", i);
    if (!x.is_number())
      p.reject(where, fmt::format("{} is not a number (expected {})", show(x), expected));
    else if (!NumberRange::unit_half_open().contains(x.get<double>()))
      p.reject(where, fmt::format("{} is out of range (expected in [0, 1))", show(x)));
    else
      betas[i] = x.get<double>();
  }
  return betas;
}

// Parameters an optimizer block leaves out take the values they have without the block, so that
// adding {"type": "AdamW"} changes nothing. DeepSpeed would take its optimizer's own defaults: one
// warning names those that differ.
void warn_defaults_unlike_deepspeed(Block& p, const AutoValues& av) {
  struct Default {
    const char* key;
    bool differs;
    std::string ours, deepspeeds;
  };
  const Default defaults[] = {
      {"lr", av.lr != 1e-3, fmt::format("{:g} (training.lr)", av.lr), "0.001"},
      {"betas", av.betas != std::array<double, 2>{0.9, 0.999},
       fmt::format("[{:g}, {:g}] (training.adam_beta1, adam_beta2)", av.betas[0], av.betas[1]), "[0.9, 0.999]"},
      {"eps", av.eps != 1e-8, fmt::format("{:g} (training.adam_epsilon)", av.eps), "1e-08"},
      {"weight_decay", av.weight_decay != 0.0, fmt::format("{:g} (training.weight_decay)", av.weight_decay), "0"},
  };
  std::string ours, deepspeeds;
  for (const auto& d : defaults) {
    if (p.present(d.key) || !d.differs) continue;
    ours += fmt::format("{}{} {}", ours.empty() ? "" : ", ", d.key, d.ours);
    deepspeeds += fmt::format("{}{} {}", deepspeeds.empty() ? "" : ", ", d.key, d.deepspeeds);
  }
  if (!ours.empty())
    p.diagnostics().warn(p.path(), fmt::format("not given: {}, as without an optimizer block (DeepSpeed's defaults "
                                               "would be {}; give them in the block to use those)",
                                               ours, deepspeeds));
}

}  // namespace

OptimizerConfig read_optimizer(Block& top, const AutoValues& av) {
  OptimizerConfig o;
  if (!top.raw("optimizer")) {
    // No block: zerotrain is the trainer and builds AdamW from its training block, as the
    // Hugging Face Trainer does for a DeepSpeed config without an optimizer.
    o.type = "AdamW";
    o.lr = av.lr;
    o.beta1 = av.betas[0];
    o.beta2 = av.betas[1];
    o.eps = av.eps;
    o.weight_decay = av.weight_decay;
    return o;
  }
  Block b = top.child("optimizer", UnknownKeys::Error);
  auto type = b.raw("type");
  if (!type) b.fail("type", "missing (expected Adam or AdamW)");
  if (!type->is_string()) b.fail("type", fmt::format("{} is not a string (expected Adam or AdamW)", show(*type)));
  const std::string name = lower(type->get<std::string>());
  if (name == "adam")
    o.type = "Adam";
  else if (name == "adamw")
    o.type = "AdamW";
  else
    b.fail("type", fmt::format("{} is not supported (expected Adam or AdamW; zerotrain implements no other "
                               "optimizer)", show(*type)));
  b.text("weight_decay_applies_to", kWeightDecayAppliesTo);  // printed by to_json; informative only
  b.unimplemented("legacy_fusion", false);

  Block p = b.child("params", UnknownKeys::Error);
  p.forbid("max_grad_norm", "not an optimizer parameter in DeepSpeed (expected the top-level gradient_clipping)");
  warn_defaults_unlike_deepspeed(p, av);
  o.lr = p.number("lr", av.lr, NumberRange::positive(), av.lr);
  auto betas = read_betas(p, av);
  o.beta1 = betas[0];
  o.beta2 = betas[1];
  o.eps = p.number("eps", av.eps, NumberRange::positive(), av.eps);
  o.weight_decay = p.number("weight_decay", av.weight_decay, NumberRange::non_negative(), av.weight_decay);
  o.bias_correction = p.boolean("bias_correction", o.bias_correction);
  o.adam_w_mode = p.boolean("adam_w_mode", o.adam_w_mode);
  if (o.type == "AdamW" && !o.adam_w_mode) {
    p.warn("adam_w_mode", "false has no effect with type AdamW (decoupled weight decay); use type Adam for L2 decay");
    o.adam_w_mode = true;
  }
  p.unimplemented("amsgrad", false);
  p.unimplemented("torch_adam", false);
  p.unimplemented("set_grad_none", true);
  p.unimplemented("fp32_optimizer_states", true);
  p.finish();
  b.finish();
  return o;
}

}  // namespace zt::config
