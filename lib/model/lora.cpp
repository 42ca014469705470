#include "model/lora.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "model/name_pattern.hpp"

namespace zt {

namespace {

// Every site of the family's block, in block order, without offsets.
std::vector<LoraSite> all_sites(const GptShape& s) {
  using enum BlockRole;
  const int C = s.d_model, F = s.ff_width(), Q = s.q_width(), KV = s.kv_heads() * s.head_size();
  const int QKV = s.qkv_width();
  if (s.model_type == ModelType::Gpt2)
    return {{"attn.c_attn", QkvWeight, C, QKV, 0, QKV},
            {"attn.c_proj", OutWeight, Q, C, 0, C},
            {"mlp.c_fc", FcWeight, C, F, 0, F},
            {"mlp.c_proj", FcProjWeight, F, C, 0, C}};
  return {{"self_attn.q_proj", QkvWeight, C, Q, 0, QKV},
          {"self_attn.k_proj", QkvWeight, C, KV, Q, QKV},
          {"self_attn.v_proj", QkvWeight, C, KV, Q + KV, QKV},
          {"self_attn.o_proj", OutWeight, Q, C, 0, C},
          {"mlp.gate_proj", FcWeight, C, F, 0, 2 * F},
          {"mlp.up_proj", FcWeight, C, F, F, 2 * F},
          {"mlp.down_proj", FcProjWeight, F, C, 0, C}};
}

std::string last_part(const std::string& module) { return module.substr(module.rfind('.') + 1); }

}  // namespace

double LoraSpec::scale() const { return rslora ? alpha / std::sqrt(double(r)) : alpha / double(r); }

std::vector<std::string> default_lora_targets(ModelType type) {
  if (type == ModelType::Gpt2) return {"c_attn"};
  return {"q_proj", "v_proj"};
}

std::vector<std::string> lora_site_names(ModelType type) {
  GptShape shape(1, 1, 1, 1, 1);
  shape.model_type = type;
  std::vector<std::string> names;
  for (const LoraSite& site : all_sites(shape))
    if (std::find(names.begin(), names.end(), last_part(site.module)) == names.end())
      names.push_back(last_part(site.module));
  return names;
}

std::vector<LoraSite> lora_sites(const GptShape& shape, const LoraSpec& spec) {
  if (!spec.enabled()) return {};
  const std::vector<std::string> targets = spec.targets.empty() ? default_lora_targets(shape.model_type) : spec.targets;
  const std::vector<std::string> names = lora_site_names(shape.model_type);
  for (const std::string& t : targets)
    if (t != "all-linear" && std::find(names.begin(), names.end(), t) == names.end())
      fail("target module \"{}\" is not a projection of a {} block (expected some of {}, or \"all-linear\")", t,
           kModelTypeNames.name(shape.model_type), fmt::join(names, ", "));
  const bool all = std::find(targets.begin(), targets.end(), "all-linear") != targets.end();
  if (shape.moe.enabled())  // adapters on experts would need one per expert: not implemented
    for (const std::string& t : targets)
      if (t == "all-linear" || t == "gate_proj" || t == "up_proj" || t == "down_proj")
        fail("target module \"{}\" reaches the MLP, which holds experts in a {} model: LoRA on the experts is not "
             "implemented (expected attention projections: q_proj, k_proj, v_proj, o_proj)",
             t, kModelTypeNames.name(shape.model_type));
  std::vector<LoraSite> sites;
  size_t cursor = 0;
  for (LoraSite site : all_sites(shape)) {
    if (!all && std::find(targets.begin(), targets.end(), last_part(site.module)) == targets.end()) continue;
    site.a_offset = cursor;
    cursor += size_t(spec.r) * size_t(site.in);
    site.b_offset = cursor;
    cursor += size_t(site.out) * size_t(spec.r);
    sites.push_back(std::move(site));
  }
  return sites;
}

void merge_lora(const GptShape& shape, const LoraSpec& spec, float* block, const float* adapters) {
  const RoleOffsets roles = block_role_offsets(shape);
  const bool conv1d = !shape.recipe().output_major;
  const size_t r = size_t(spec.r);
  const double scale = spec.scale();
  std::vector<double> delta;
  for (const LoraSite& s : lora_sites(shape, spec)) {
    const float* A = adapters + s.a_offset;  // [r, in]
    const float* B = adapters + s.b_offset;  // [out, r]
    float* W = block + roles[size_t(s.projection)];
    const size_t in = size_t(s.in), width = size_t(s.width);
    delta.assign(in, 0.0);
    for (size_t o = 0; o < size_t(s.out); ++o) {
      std::fill(delta.begin(), delta.end(), 0.0);
      for (size_t k = 0; k < r; ++k) {
        const double b = B[o * r + k];
        for (size_t i = 0; i < in; ++i) delta[i] += b * A[k * in + i];
      }
      const size_t row = size_t(s.column) + o;  // of the packed output
      for (size_t i = 0; i < in; ++i) {
        float& w = conv1d ? W[i * width + row] : W[row * in + i];
        w = float(double(w) + scale * delta[i]);
      }
    }
  }
}

namespace {

constexpr std::string_view kLoraA = ".lora_A.weight", kLoraB = ".lora_B.weight";

bool name_ends_with(std::string_view name, std::string_view end) {
  return name.size() >= end.size() && name.substr(name.size() - end.size()) == end;
}

}  // namespace

LoraPart lora_part(std::string_view layout_name) {
  if (name_ends_with(layout_name, kLoraA)) return LoraPart::A;
  if (name_ends_with(layout_name, kLoraB)) return LoraPart::B;
  return LoraPart::None;
}

int lora_group(const GptShape& shape, int layer) {
  const int own = 2 + shape.n_layer + (shape.tied_head ? 0 : 1);
  return own + layer;
}

namespace {

void add_adapter_groups(const GptShape& shape, const LoraSpec& spec, ParamLayout& layout) {
  const std::vector<LoraSite> sites = lora_sites(shape, spec);
  const size_t r = size_t(spec.r);
  for (int l = 0; l < shape.n_layer; ++l) {
    const std::string block = layout.groups[size_t(gpt_block_group(l))].name;
    ParamGroup group{block + ".lora", layout.total, 0, {}};
    auto add = [&](std::string name, std::vector<size_t> shape_of) {
      TensorSpec t;
      t.name = std::move(name);
      t.offset = layout.total;
      t.shape = std::move(shape_of);
      t.weight_decay = true;
      layout.total += t.numel();
      group.size += t.numel();
      group.tensors.push_back(std::move(t));
    };
    for (const LoraSite& site : sites) {
      add(block + "." + site.module + std::string(kLoraA), {r, size_t(site.in)});
      add(block + "." + site.module + std::string(kLoraB), {size_t(site.out), r});
    }
    layout.groups.push_back(std::move(group));
  }
}

void apply_freeze(const std::vector<std::string>& patterns, ParamLayout& layout) {
  for (size_t i = 0; i < patterns.size(); ++i) {
    const NamePattern pattern = [&] {
      try {
        return NamePattern(patterns[i]);
      } catch (const Error& e) {
        throw TrainedPartsError(fmt::format("training.freeze[{}]", i), e.what());
      }
    }();
    bool matched = false;
    for (ParamGroup& g : layout.groups)
      for (TensorSpec& t : g.tensors)
        if (pattern.matches(t.name)) {
          t.trainable = false;
          matched = true;
        }
    if (!matched)
      throw TrainedPartsError(fmt::format("training.freeze[{}]", i),
                              fmt::format("\"{}\" matches no parameter (the names are Hugging Face's, such as {}, {})",
                                          pattern.text(), layout.groups.front().tensors.front().name,
                                          layout.groups[1].tensors.front().name));
  }
}

}  // namespace

ParamLayout make_training_layout(const GptShape& shape, const TrainedParts& parts) {
  ParamLayout layout = make_gpt_layout(shape);
  if (parts.lora.enabled()) {
    for (ParamGroup& g : layout.groups)
      for (TensorSpec& t : g.tensors) t.trainable = false;
    try {
      add_adapter_groups(shape, parts.lora, layout);
    } catch (const Error& e) {
      throw TrainedPartsError("lora.target_modules", e.what());
    }
  }
  apply_freeze(parts.freeze, layout);
  if (layout.trainable_numel() == 0)
    throw TrainedPartsError("training.freeze", "every parameter is frozen: nothing would train (expected patterns "
                                               "that leave some parameters out)");
  return layout;
}

}  // namespace zt
