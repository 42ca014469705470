// The preference block: preference training (DPO and its family) with TRL's DPOConfig names.
#include <fmt/format.h>

#include <optional>

#include "config/blocks.hpp"
#include "config/model_block.hpp"
#include "core/error.hpp"
#include "hf/hf_config.hpp"
#include "hf/hf_dir.hpp"

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

// Why `dir` cannot be the reference model of a policy of `policy`'s architecture ("" when it can):
// its weights take the policy's place for the reference pass, so it must be a model directory with
// weights, of the policy's family and shape (its vocabulary that of the policy's data).
std::string unfit_reference_model(const std::string& dir, const ModelConfig& policy) {
  const PathKind kind = classify_path(dir);
  if (kind == PathKind::Missing) return fmt::format("{}: no such directory (expected precompute, adapters_off or a "
                                                    "Hugging Face model directory)", dir);
  if (kind != PathKind::ModelDir || !has_hf_config(dir) || !has_hf_weights(dir))
    return fmt::format("{}: not a model directory (expected config.json and model.safetensors or its index, as "
                       "save_pretrained writes them)",
                       dir);
  ModelConfig reference;
  try {
    reference = read_model_block({{"path", dir}}, hf_file(dir, kHfConfigFile));
  } catch (const Error& e) {
    return e.what();
  }
  nlohmann::json want = model_keys(policy.shape), got = model_keys(reference.shape);
  want.erase("max_seq_len");  // positions beyond the data's are never computed
  std::vector<std::string> keys = {"model_type"};  // the family first: it says the most
  for (const auto& [key, value] : want.items())
    if (key != "model_type") keys.push_back(key);
  for (const std::string& key : keys)
    if (const nlohmann::json& value = want.at(key); got.value(key, nlohmann::json()) != value)
      return fmt::format("{}: {} is {}, the policy's is {}: the reference model computes the log-probabilities of "
                         "the policy's data in the policy's place, so it has the policy's family, vocabulary and shape",
                         hf_file(dir, kHfConfigFile), key, got.value(key, nlohmann::json()).dump(), value.dump());
  return "";
}

}  // namespace

PreferenceConfig read_preference(Block& b, bool given, bool lora, const ModelConfig& model) {
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
  const std::string text = b.file_path("reference", p.reference_text());
  if (const auto named = kPreferenceReferenceNames.find(text)) {
    p.reference = *named;
  } else {
    p.reference = PreferenceReferenceSource::Model;
    p.reference_model = text;
  }
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
  if (p.reference == PreferenceReferenceSource::AdaptersOff && !lora)
    b.reject("reference", "adapters_off needs LoRA adapters (a lora block) to turn off");
  if (p.reference == PreferenceReferenceSource::Model && p.has_reference())
    if (const std::string why = unfit_reference_model(p.reference_model, model); !why.empty())
      b.reject("reference", why);
  return p;
}

}  // namespace zt::config
