#include "model/gpt_layout.hpp"

#include <string>
#include <vector>

#include "core/error.hpp"

namespace zt {

void validate_gpt_shape(const GptShape& s) {
  auto positive = [](const char* field, int v) {
    if (v <= 0) fail("{} must be positive, got {}", field, v);
  };
  positive("model.n_layer", s.n_layer);
  positive("model.n_head", s.n_head);
  positive("model.d_model", s.d_model);
  positive("model.vocab_size", s.vocab_size);
  positive("model.max_seq_len", s.max_seq_len);
  if (s.head_dim == 0 && s.d_model % s.n_head != 0)
    fail("model.n_head ({}) must divide model.d_model ({}) into equal heads", s.n_head, s.d_model);
  if (auto p = architecture_problem(s)) fail("model.{}: {}", p->key, p->what);
}

namespace {

// The module of a sparse block's router and experts: transformers' attribute name.
std::string moe_module(const GptShape& s) { return s.model_type == ModelType::Mixtral ? "block_sparse_moe." : "mlp."; }

// One tensor of a block, relative to the block's name prefix.
struct BlockTensorDef {
  std::string suffix;
  std::vector<size_t> shape;
  BlockRole role;
};

std::vector<BlockTensorDef> block_tensors(const GptShape& s, int layer) {
  using enum BlockRole;
  const size_t C = size_t(s.d_model), F = size_t(s.ff_width()), hd = size_t(s.head_size());
  const size_t Q = size_t(s.n_head) * hd, KV = size_t(s.kv_heads()) * hd;
  const BlockRecipe r = s.recipe();
  if (!r.output_major)  // GPT-2: Conv1D [in, out]
    return {{"ln_1.weight", {C}, Norm1Weight},
            {"ln_1.bias", {C}, Norm1Bias},
            {"attn.c_attn.weight", {C, Q + 2 * KV}, QkvWeight},
            {"attn.c_attn.bias", {Q + 2 * KV}, QkvBias},
            {"attn.c_proj.weight", {Q, C}, OutWeight},
            {"attn.c_proj.bias", {C}, OutBias},
            {"ln_2.weight", {C}, Norm2Weight},
            {"ln_2.bias", {C}, Norm2Bias},
            {"mlp.c_fc.weight", {C, F}, FcWeight},
            {"mlp.c_fc.bias", {F}, FcBias},
            {"mlp.c_proj.weight", {F, C}, FcProjWeight},
            {"mlp.c_proj.bias", {C}, FcProjBias}};
  std::vector<BlockTensorDef> t = {{"input_layernorm.weight", {C}, Norm1Weight},
                                   {"self_attn.q_proj.weight", {Q, C}, QkvWeight},
                                   {"self_attn.k_proj.weight", {KV, C}, QkvWeight},
                                   {"self_attn.v_proj.weight", {KV, C}, QkvWeight}};
  if (r.qkv_bias) {
    t.push_back({"self_attn.q_proj.bias", {Q}, QkvBias});
    t.push_back({"self_attn.k_proj.bias", {KV}, QkvBias});
    t.push_back({"self_attn.v_proj.bias", {KV}, QkvBias});
  }
  if (r.qk_norm) {
    t.push_back({"self_attn.q_norm.weight", {r.qk_norm_whole ? Q : hd}, QNormWeight});
    t.push_back({"self_attn.k_norm.weight", {r.qk_norm_whole ? KV : hd}, KNormWeight});
  }
  t.push_back({"self_attn.o_proj.weight", {C, Q}, OutWeight});
  if (r.o_bias) t.push_back({"self_attn.o_proj.bias", {C}, OutBias});
  if (r.gemma) {
    t.push_back({"post_attention_layernorm.weight", {C}, PostAttnNormWeight});
    t.push_back({"pre_feedforward_layernorm.weight", {C}, Norm2Weight});
  } else {
    t.push_back({"post_attention_layernorm.weight", {C}, Norm2Weight});
  }
  if (s.sparse(layer)) {  // the router, then each expert's gate and up (one packed [2I, C]) and down
    const size_t E = size_t(s.moe.num_experts), I = size_t(s.expert_width()), S = size_t(s.moe.d_shared);
    const bool mixtral = s.model_type == ModelType::Mixtral;
    const std::string mlp = moe_module(s);
    const char* names[3] = {"gate_proj", "up_proj", "down_proj"};
    if (mixtral) names[0] = "w1", names[1] = "w3", names[2] = "w2";
    t.push_back({mlp + "gate.weight", {E, C}, RouterWeight});
    for (size_t e = 0; e < E; ++e) {
      const std::string p = mlp + "experts." + std::to_string(e) + ".";
      t.push_back({p + names[0] + ".weight", {I, C}, ExpertWeights});
      t.push_back({p + names[1] + ".weight", {I, C}, ExpertWeights});
      t.push_back({p + names[2] + ".weight", {C, I}, ExpertWeights});
    }
    if (S > 0) {
      t.push_back({"mlp.shared_expert.gate_proj.weight", {S, C}, SharedExpertWeights});
      t.push_back({"mlp.shared_expert.up_proj.weight", {S, C}, SharedExpertWeights});
      t.push_back({"mlp.shared_expert.down_proj.weight", {C, S}, SharedExpertWeights});
      t.push_back({"mlp.shared_expert_gate.weight", {1, C}, SharedGateWeight});
    }
    return t;
  }
  t.push_back({"mlp.gate_proj.weight", {F, C}, FcWeight});
  t.push_back({"mlp.up_proj.weight", {F, C}, FcWeight});
  if (r.mlp_bias) {
    t.push_back({"mlp.gate_proj.bias", {F}, FcBias});
    t.push_back({"mlp.up_proj.bias", {F}, FcBias});
  }
  t.push_back({"mlp.down_proj.weight", {C, F}, FcProjWeight});
  if (r.mlp_bias) t.push_back({"mlp.down_proj.bias", {C}, FcProjBias});
  if (r.gemma) t.push_back({"post_feedforward_layernorm.weight", {C}, PostFfNormWeight});
  return t;
}

// Appends tensors to a group, one after the other.
struct GroupBuilder {
  ParamGroup& group;
  size_t& cursor;
  void add(std::string name, std::vector<size_t> shape) {
    TensorSpec t;
    t.name = std::move(name);
    t.offset = cursor;
    t.shape = std::move(shape);
    t.weight_decay = t.shape.size() >= 2;
    cursor += t.numel();
    group.size += t.numel();
    group.tensors.push_back(std::move(t));
  }
};

}  // namespace

std::vector<std::string> fp32_module_patterns(const GptShape& shape) {
  if (!shape.moe.enabled()) return {};
  return {"model.layers.*." + moe_module(shape) + "gate"};
}

bool has_vocabulary_rows(std::string_view name) {
  return name == "wte.weight" || name == "model.embed_tokens.weight" || name == "lm_head.weight";
}

ParamLayout make_gpt_layout(const GptShape& shape) {
  validate_gpt_shape(shape);
  const bool gpt2 = shape.model_type == ModelType::Gpt2;
  const size_t C = size_t(shape.d_model), Vp = size_t(shape.padded_vocab());
  ParamLayout layout;
  size_t cursor = 0;
  auto begin_group = [&](std::string name) -> GroupBuilder {
    layout.groups.push_back(ParamGroup{std::move(name), cursor, 0, {}});
    return GroupBuilder{layout.groups.back(), cursor};
  };

  {
    GroupBuilder g = begin_group("embeddings");
    if (gpt2) {
      g.add("wte.weight", {Vp, C});
      g.add("wpe.weight", {size_t(shape.max_seq_len), C});
    } else {
      g.add("model.embed_tokens.weight", {Vp, C});
    }
  }
  for (int l = 0; l < shape.n_layer; l++) {
    const std::string p = (gpt2 ? "h." : "model.layers.") + std::to_string(l);
    GroupBuilder g = begin_group(p);
    for (const BlockTensorDef& t : block_tensors(shape, l)) g.add(p + "." + t.suffix, t.shape);
  }
  if (gpt2) {
    GroupBuilder g = begin_group("ln_f");
    g.add("ln_f.weight", {C});
    g.add("ln_f.bias", {C});
  } else {
    begin_group("norm").add("model.norm.weight", {C});
  }
  if (!shape.tied_head) begin_group("lm_head").add("lm_head.weight", {Vp, C});
  layout.total = cursor;
  return layout;
}

std::vector<HfTensor> hf_tensors(const GptShape& shape) {
  std::vector<HfTensor> out;
  for (const ParamGroup& g : make_gpt_layout(shape).groups)
    for (const TensorSpec& t : g.tensors) {
      HfTensor h{t.name, t.shape, t.offset, 0};
      if (has_vocabulary_rows(t.name)) {
        h.shape[0] = size_t(shape.vocab_size);
        h.padding = t.numel() - h.shape[0] * h.shape[1];
      }
      out.push_back(std::move(h));
    }
  return out;
}

RoleOffsets block_role_offsets(const GptShape& shape, int layer, bool experts_apart) {
  RoleOffsets offsets;
  offsets.fill(kAbsent);
  size_t cursor = 0;
  for (const BlockTensorDef& t : block_tensors(shape, layer)) {
    if (experts_apart && t.role == BlockRole::ExpertWeights) continue;
    size_t& o = offsets[size_t(t.role)];
    if (o == kAbsent) o = cursor;
    size_t n = 1;
    for (size_t d : t.shape) n *= d;
    cursor += n;
  }
  return offsets;
}

}  // namespace zt
