#pragma once
// LoRA adapters (Hu et al. 2021, as PEFT's LoraConfig makes them) and frozen parameters: what of a
// model trains. An adapted projection W [out, in] computes W·x + scale · B·A·dropout(x) with
// A [r, in] and B [out, r]; scale = alpha / r, or alpha / sqrt(r) with rsLoRA. The adapters of a
// block are a parameter group of their own (after the model's own groups in the flat buffer, so
// the base layout is unchanged), trained while every base weight is frozen.
//
// Sites are named as PEFT's target_modules name them (the last part of the module's name):
//   llama family: q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj
//   gpt2:         c_attn, c_proj (the attention's and the MLP's), c_fc
// "all-linear" is every one of them (PEFT's: every linear layer but the LM head). The packed
// projections take their slices: an adapter on q_proj adds B·A·x to the q columns of the packed
// q/k/v output, one on up_proj to the up half of the packed gate/up output.
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/param_layout.hpp"
#include "model/gpt_layout.hpp"
#include "model/gpt_shape.hpp"

namespace zt {

struct LoraSpec {
  int r = 0;  // the rank; 0: no adapters
  double alpha = 8.0;
  double dropout = 0.0;  // on the adapter's input, in training
  bool rslora = false;   // scale alpha / sqrt(r) instead of alpha / r
  std::vector<std::string> targets;  // PEFT's target_modules (empty: the family's default)
  bool enabled() const { return r > 0; }
  double scale() const;
  bool operator==(const LoraSpec&) const = default;
};

// The modules PEFT adapts when target_modules is not given (its mapping for the family):
// q_proj and v_proj, or GPT-2's c_attn.
std::vector<std::string> default_lora_targets(ModelType type);
// Every site name the family has, in block order.
std::vector<std::string> lora_site_names(ModelType type);

// One adapted projection of a block.
struct LoraSite {
  std::string module;   // inside the block: "self_attn.q_proj", "attn.c_attn", "mlp.c_proj"
  BlockRole projection;  // the block weight it adapts: QkvWeight, OutWeight, FcWeight or FcProjWeight
  int in = 0, out = 0;   // A [r, in], B [out, r]
  int column = 0;        // first column of its output in the projection's output row
  int width = 0;         // the projection's output row (the packed q/k/v or gate/up width)
  size_t a_offset = 0, b_offset = 0;  // of A and B from the start of the block's adapter group
};
// The sites spec.targets select, in block order. Throws zt::Error naming a target the family does
// not have (and the ones it has).
std::vector<LoraSite> lora_sites(const GptShape& shape, const LoraSpec& spec);

// PEFT's merge: adds scale · B·A of each adapter to the weight it adapts. block: the fp32 values of
// a block's group (its own tensors, gpt_layout.hpp); adapters: those of its adapter group. The
// packed projections take the update in their rows (nn.Linear [out, in]) or columns (GPT-2's
// Conv1D [in, out]) of the adapted module.
void merge_lora(const GptShape& shape, const LoraSpec& spec, float* block, const float* adapters);

// Which matrix of an adapter a tensor of the training layout is (its name, as make_training_layout
// gives it: "<block>.<module>.lora_A.weight"); None for the model's own tensors. The one reader of
// the adapters' names: PEFT's naming changes here.
enum class LoraPart { None, A, B };
LoraPart lora_part(std::string_view layout_name);

// What of a model trains: LoRA adapters (their base weights frozen), and tensors frozen by name
// pattern (training.freeze, model/name_pattern.hpp).
struct TrainedParts {
  LoraSpec lora;
  std::vector<std::string> freeze;
  bool operator==(const TrainedParts&) const = default;
};

// A training.freeze pattern or a LoRA target that cannot be used: the config key ("training.freeze[1]",
// "lora.target_modules") and why; the message says both.
struct TrainedPartsError : Error {
  TrainedPartsError(std::string key_of, std::string reason_of)
      : Error(printable(key_of + ": " + reason_of)), key(std::move(key_of)), reason(std::move(reason_of)) {}
  std::string key, reason;
};

// Index of the adapter group of `layer` (after the model's own groups) in the training layout.
int lora_group(const GptShape& shape, int layer);
// The model's parameter layout (gpt_layout.hpp) with the adapter groups after its own, every
// tensor marked trainable or frozen. Throws TrainedPartsError for a freeze pattern that is malformed
// or matches no tensor, a target module the family does not have, or a freeze that leaves nothing
// to train.
ParamLayout make_training_layout(const GptShape& shape, const TrainedParts& parts);

}  // namespace zt
