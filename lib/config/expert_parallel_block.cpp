// expert_parallel: DeepSpeed 0.19's AutoEP block, read as deepspeed/module_inject/auto_ep_config.py
// reads it (missing keys take its defaults, unknown keys are ignored with a warning).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string_view>

#include "config/blocks.hpp"

namespace zt::config {
namespace {

// DeepSpeed's presets, each with the model_type it is made for ("" where zerotrain reads none).
struct EpPreset {
  std::string_view name, model_type;
};
constexpr std::array<EpPreset, 6> kPresets = {{{"mixtral", "mixtral"},
                                               {"qwen3_moe", "qwen3_moe"},
                                               {"qwen3_5_moe", ""},
                                               {"deepseek_v2", ""},
                                               {"deepseek_v3", ""},
                                               {"llama4", ""}}};

std::string preset_names() {
  std::string out;
  for (const EpPreset& p : kPresets) out += (out.empty() ? "" : ", ") + std::string(p.name);
  return out;
}

// What AutoEP reads to find, route and run the experts of a PyTorch model: zerotrain's model
// already knows its experts and routes as transformers does, so these change nothing.
void read_unimplemented(Block& b) {
  b.unimplemented("expert_tensor_parallel_size", 1);
  b.unimplemented("validate_folding_routing", false);
  b.unimplemented("async_split_plan", false);
  b.unimplemented("use_grouped_mm", true);
  b.unimplemented("disable_triton_grouped_mm", false);
  b.unimplemented("route_scale", 1.0);
  b.unimplemented("comm_num_sm", 12);
  b.unimplemented("comm_qp_margin", 4);
  b.unimplemented("comm_max_tokens_per_rank", 0);
  b.unimplemented("comm_backend", "comm");
  b.unimplemented("gate_up_impl", "separate");
  for (const char* key : {"moe_layer_pattern", "expert_pattern", "router_pattern", "route_norm", "num_expert_groups",
                          "num_limited_groups", "expert_w1", "expert_w2", "expert_w3", "num_experts_attr",
                          "top_k_attr", "has_shared_experts", "shared_experts_pattern", "shared_experts_gate_pattern",
                          "expert_activation"})
    b.unimplemented(key, nullptr);
  // Keys whose default is the string "auto".
  for (const char* key : {"score_apply", "combine_impl", "row_weighting_impl", "score_func", "top_k",
                          "routed_scaling_factor"}) {
    const nlohmann::json* v = b.raw(key);
    if (v && *v != "auto")
      b.warn(key, fmt::format("{} has no effect (not implemented in zerotrain; default \"auto\"); ignored",
                              show(*v)));
  }
}

}  // namespace

ExpertParallelConfig read_expert_parallel(Block& top, const ModelConfig& model, int world_size) {
  Block b = top.child("expert_parallel", UnknownKeys::Warn);
  ExpertParallelConfig ep;
  ep.enabled = b.boolean("enabled", ep.enabled);
  ep.autoep_size = b.integer("autoep_size", ep.autoep_size, IntRange::at_least(1));
  if (const nlohmann::json* v = b.raw("load_balance_coeff"))  // null: DeepSpeed's only accepted value
    b.reject("load_balance_coeff",
             fmt::format("{} is not supported (DeepSpeed's AutoEP refuses it too: auxiliary-loss-free balancing); "
                         "expected null or no key (the load-balancing loss is model.router_aux_loss_coef)",
                         show(*v)));
  ep.preset_model = b.text("preset_model", "");
  read_unimplemented(b);
  b.finish();
  if (!ep.enabled) {
    if (ep.autoep_size != 1)
      b.warn("autoep_size", fmt::format("{} has no effect while expert_parallel.enabled is false", ep.autoep_size));
    return ep;
  }
  const std::string_view type = kModelTypeNames.name(model.shape.model_type);
  if (!ep.preset_model.empty()) {
    const auto* p = std::find_if(kPresets.begin(), kPresets.end(),
                                 [&](const EpPreset& q) { return q.name == ep.preset_model; });
    if (p == kPresets.end())
      b.fail("preset_model", fmt::format("\"{}\" is not one of DeepSpeed's presets ({})", ep.preset_model,
                                         preset_names()));
    if (p->model_type != type)
      b.fail("preset_model", fmt::format("\"{}\" is a preset for {} models, and the model is {}", ep.preset_model,
                                         p->model_type.empty() ? "other" : p->model_type, type));
  }
  const int experts = model.shape.moe.num_experts;
  if (experts == 0)
    b.fail("enabled", fmt::format("true, and the model ({}) has no experts (expected a mixture-of-experts model: "
                                  "qwen3_moe, qwen2_moe, mixtral or olmoe with num_experts > 0)",
                                  type));
  if (world_size % ep.autoep_size != 0)
    b.fail("autoep_size", fmt::format("{} does not divide the world size {} (expected a divisor of it: each group "
                                      "of autoep_size ranks holds every expert once)",
                                      ep.autoep_size, world_size));
  if (experts % ep.autoep_size != 0)
    b.fail("autoep_size", fmt::format("{} does not divide num_experts {} (expected a divisor of it: each rank of a "
                                      "group holds num_experts / autoep_size experts)",
                                      ep.autoep_size, experts));
  if (ep.autoep_size == 1)
    b.warn("autoep_size", "1: every rank holds every expert, so no tokens travel between ranks");
  return ep;
}

}  // namespace zt::config
