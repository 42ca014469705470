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
  if (s.d_model % s.n_head != 0)
    fail("model.n_head ({}) must divide model.d_model ({}) into equal heads", s.n_head, s.d_model);
}

namespace {

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

ParamLayout make_gpt_layout(const GptShape& shape) {
  validate_gpt_shape(shape);
  const size_t C = size_t(shape.d_model);
  ParamLayout layout;
  size_t cursor = 0;
  auto begin_group = [&](std::string name) -> GroupBuilder {
    layout.groups.push_back(ParamGroup{std::move(name), cursor, 0, {}});
    return GroupBuilder{layout.groups.back(), cursor};
  };

  {
    GroupBuilder g = begin_group("embeddings");
    g.add("wte.weight", {size_t(shape.padded_vocab()), C});
    g.add("wpe.weight", {size_t(shape.max_seq_len), C});
  }
  for (int l = 0; l < shape.n_layer; l++) {
    const std::string p = "h." + std::to_string(l);
    GroupBuilder g = begin_group(p);
    // Same order as BlockTensor.
    g.add(p + ".ln_1.weight", {C});
    g.add(p + ".ln_1.bias", {C});
    g.add(p + ".attn.c_attn.weight", {C, 3 * C});
    g.add(p + ".attn.c_attn.bias", {3 * C});
    g.add(p + ".attn.c_proj.weight", {C, C});
    g.add(p + ".attn.c_proj.bias", {C});
    g.add(p + ".ln_2.weight", {C});
    g.add(p + ".ln_2.bias", {C});
    g.add(p + ".mlp.c_fc.weight", {C, 4 * C});
    g.add(p + ".mlp.c_fc.bias", {4 * C});
    g.add(p + ".mlp.c_proj.weight", {4 * C, C});
    g.add(p + ".mlp.c_proj.bias", {C});
  }
  {
    GroupBuilder g = begin_group("ln_f");
    g.add("ln_f.weight", {C});
    g.add("ln_f.bias", {C});
  }
  layout.total = cursor;
  return layout;
}

BlockOffsets gpt_block_offsets(int d_model) {
  const size_t C = size_t(d_model);
  const std::array<size_t, kBlockTensorCount> sizes = {C, C, 3 * C * C, 3 * C, C * C, C, C, C, 4 * C * C, 4 * C, 4 * C * C, C};
  BlockOffsets offsets{};
  size_t cursor = 0;
  for (int i = 0; i < kBlockTensorCount; i++) {
    offsets[i] = cursor;
    cursor += sizes[i];
  }
  return offsets;
}

}  // namespace zt
