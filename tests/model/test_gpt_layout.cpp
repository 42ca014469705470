#include <catch2/catch.hpp>

#include <set>

#include "core/error.hpp"
#include "error_naming.hpp"
#include "model/gpt.hpp"

using namespace zt;

TEST_CASE("GPT-2 layout: groups, Hugging Face names, contiguous coverage", "[model][layout]") {
  const GptShape shape = *gpt_preset("toy");  // 2 layers, d_model 64, vocab 256
  const ParamLayout layout = make_gpt_layout(shape);
  const size_t C = 64;

  REQUIRE(layout.groups.size() == 4);
  CHECK(layout.groups[0].name == "embeddings");
  CHECK(layout.groups[1].name == "h.0");
  CHECK(layout.groups[2].name == "h.1");
  CHECK(layout.groups[3].name == "ln_f");

  size_t cursor = 0;
  std::set<std::string> names;
  for (auto& g : layout.groups) {
    REQUIRE(g.offset == cursor);
    size_t in_group = 0;
    for (auto& t : g.tensors) {
      REQUIRE(t.offset == cursor);
      cursor += t.numel();
      in_group += t.numel();
      CHECK(t.weight_decay == (t.shape.size() == 2));
      names.insert(t.name);
    }
    REQUIRE(in_group == g.size);
  }
  REQUIRE(cursor == layout.total);
  REQUIRE(names.size() == 4 + 2 * 12);

  auto shape_of = [&](const std::string& name) {
    const TensorSpec* t = layout.find(name);
    REQUIRE(t != nullptr);
    return t->shape;
  };
  CHECK(shape_of("wte.weight") == std::vector<size_t>{256, C});  // 256 is already a multiple of 128
  CHECK(shape_of("wpe.weight") == std::vector<size_t>{128, C});
  CHECK(shape_of("h.1.ln_1.weight") == std::vector<size_t>{C});
  CHECK(shape_of("h.1.attn.c_attn.weight") == std::vector<size_t>{C, 3 * C});
  CHECK(shape_of("h.1.attn.c_attn.bias") == std::vector<size_t>{3 * C});
  CHECK(shape_of("h.0.attn.c_proj.weight") == std::vector<size_t>{C, C});
  CHECK(shape_of("h.0.mlp.c_fc.weight") == std::vector<size_t>{C, 4 * C});
  CHECK(shape_of("h.0.mlp.c_fc.bias") == std::vector<size_t>{4 * C});
  CHECK(shape_of("h.0.mlp.c_proj.weight") == std::vector<size_t>{4 * C, C});
  CHECK(shape_of("h.0.mlp.c_proj.bias") == std::vector<size_t>{C});
  CHECK(shape_of("ln_f.bias") == std::vector<size_t>{C});

  // The block offsets the model computes with are those of the layout, for every block: GPT-2's
  // block holds every role but the q/k norms, the experts' and Gemma's norms of the branch outputs,
  // in BlockRole order.
  const RoleOffsets offsets = block_role_offsets(shape);
  for (int l = 0; l < shape.n_layer; l++) {
    const ParamGroup& g = layout.groups[gpt_block_group(l)];
    REQUIRE(g.tensors.size() == size_t(BlockRole::RouterWeight) - 2);
    size_t i = 0;
    for (int role = 0; role < kBlockRoles; ++role) {
      if (offsets[size_t(role)] == kAbsent) continue;
      CHECK(g.tensors[i++].offset - g.offset == offsets[size_t(role)]);
    }
  }
}

TEST_CASE("GPT-2 124M: parameter count and padded vocabulary", "[model][layout]") {
  const GptShape shape = *gpt_preset("gpt2-124m");
  Gpt model(shape, 1, 8);
  CHECK(model.num_params() == 124439808);  // the published GPT-2 small count (tied LM head)
  CHECK(model.padded_vocab() == 50304);
  // The flat buffer holds the padded vocabulary on top of the exported parameters.
  CHECK(model.layout().total == model.num_params() + size_t(50304 - 50257) * 768);
  CHECK(model.layout().find("wte.weight")->shape == std::vector<size_t>{50304, 768});
  // 6·N + 12·L·C·T
  CHECK(model.flops_per_token() == 6 * size_t(124439808) + 12 * size_t(12) * 768 * 8);
}

TEST_CASE("GPT-2 rejects bad shapes and bounds, naming the field", "[model][layout]") {
  GptShape shape = *gpt_preset("toy");
  const auto throws_naming = [](auto make, const std::string& field) { test::require_error_naming(make, field); };
  GptShape bad = shape;
  bad.n_head = 5;  // does not divide 64
  throws_naming([&] { return Gpt(bad, 1, 8); }, "model.n_head");
  bad = shape;
  bad.n_layer = 0;
  throws_naming([&] { return Gpt(bad, 1, 8); }, "model.n_layer");
  bad = shape;
  bad.vocab_size = -3;
  throws_naming([&] { return make_gpt_layout(bad); }, "model.vocab_size");
  throws_naming([&] { return Gpt(shape, 1, 129); }, "model.max_seq_len");
  throws_naming([&] { return Gpt(shape, 0, 8); }, "micro-batch");

  Gpt model(shape, 2, 8);
  ResidentParams params(model.layout());
  std::vector<int32_t> tokens(3 * 9, 1);
  throws_naming([&] { return model.forward(tokens.data(), nullptr, 3, 8, params); }, "micro-batch size B=3");
  throws_naming([&] { return model.forward(tokens.data(), nullptr, 1, 9, params); }, "sequence length T=9");
  tokens[5] = 256;
  throws_naming([&] { return model.forward(tokens.data(), nullptr, 2, 8, params); }, "inputs[5] = 256");
  tokens[5] = 1;
  std::vector<int32_t> targets(16, 0);
  targets[15] = -2;  // -1 is the ignored target (a loss mask's), anything else negative is an error
  throws_naming([&] { return model.forward(tokens.data(), targets.data(), 2, 8, params); }, "targets[15] = -2");
  targets[15] = 256;
  throws_naming([&] { return model.forward(tokens.data(), targets.data(), 2, 8, params); }, "targets[15] = 256");
  // Without targets: logits only, and no backward.
  REQUIRE(std::isnan(model.forward(tokens.data(), nullptr, 2, 8, params)));
  throws_naming([&] { model.backward(params, 1.0f); return 0; }, "forward with targets");
}

TEST_CASE("GPT activation bytes are known before allocating, exactly as the ledger counts them", "[model][memory]") {
  GptShape shape = *gpt_preset("toy");
  shape.vocab_size = 300;  // padded to 384: the logits use the padded width
  for (auto [B, T, slots] :
       {std::tuple{2, 16, shape.n_layer}, std::tuple{3, 7, 1}, std::tuple{1, 128, shape.n_layer}}) {
    INFO("B " << B << " T " << T << " block slots " << slots);
    const size_t before = MemoryLedger::instance().stats().cur(MemCategory::Activations);
    GptActivations acts(shape, B, T, slots);
    const size_t held = MemoryLedger::instance().stats().cur(MemCategory::Activations) - before;
    CHECK(GptActivations::bytes(shape, B, T, slots) == held);
  }
}

// Expert parallelism: the rank at place 1 of groups of 2 holds experts 2 and 3 of each sparse
// layer, in a group of domain 1 per layer after every other group; its tensors map onto the
// whole layout by name, flat and in each domain's trainable space, and the seeded values are the
// whole layout's.
TEST_CASE("an expert-parallel layout holds the place's experts apart, mapped onto the whole layout",
          "[model][layout][expert_parallel]") {
  using namespace zt;
  const GptShape shape = gpt_preset("qwen3-moe-tiny")->resolved();
  REQUIRE(shape.moe.num_experts == 4);
  const ParamLayout whole = make_gpt_layout(shape);
  const ParamLayout part = expert_parallel_layout(shape, whole, {2, 1});
  REQUIRE(part.groups.size() > whole.groups.size());
  for (size_t g = 0; g < whole.groups.size(); ++g) {
    INFO(whole.groups[g].name);
    CHECK(part.groups[g].name == whole.groups[g].name);
    CHECK(part.groups[g].domain == 0);
    for (const TensorSpec& t : part.groups[g].tensors) CHECK(t.name.find(".experts.") == std::string::npos);
  }
  size_t expert_elements = 0, at = 0;
  for (const ParamGroup& g : part.groups) {
    CHECK(g.offset == at);  // the groups cover the flat buffer in order
    at += g.size;
  }
  CHECK(at == part.total);
  for (int l = 0; l < shape.n_layer; ++l) {
    const int g = expert_group_of(shape, part, l);
    if (!shape.sparse(l)) {
      CHECK(g < 0);
      continue;
    }
    REQUIRE(g >= int(whole.groups.size()));
    const ParamGroup& experts = part.groups[size_t(g)];
    CHECK(experts.domain == 1);
    CHECK(experts.name == "model.layers." + std::to_string(l) + ".mlp.experts");
    REQUIRE(experts.tensors.size() == 6);
    CHECK(experts.tensors.front().name == "model.layers." + std::to_string(l) + ".mlp.experts.2.gate_proj.weight");
    CHECK(experts.tensors.back().name == "model.layers." + std::to_string(l) + ".mlp.experts.3.down_proj.weight");
    expert_elements += experts.size;
  }
  CHECK(part.total + expert_elements == whole.total);  // the other place's experts are not here
  CHECK(expert_parallel_layout(shape, whole, {1, 0}).groups.size() == whole.groups.size());

  const LayoutMap map(part, whole);
  for (const ParamGroup& g : part.groups)
    for (const TensorSpec& t : g.tensors) {
      const std::vector<LayoutMap::Piece> pieces = map.flat({t.offset, t.offset + t.numel()});
      REQUIRE(pieces.size() == 1);
      CHECK(pieces[0].to == whole.find(t.name)->offset);
    }
  // Nothing frozen: each domain's trainable space is its groups one after the other.
  const std::vector<LayoutMap::Piece> experts = map.compact(1, {0, expert_elements});
  REQUIRE(!experts.empty());
  CHECK(experts.front().to == whole.find("model.layers.0.mlp.experts.2.gate_proj.weight")->offset);
  Gpt model(shape, 1, 8, false, cpu_backend(), {}, kLogitsBytes, 0, {2, 1});
  Gpt reference(shape, 1, 8);
  std::vector<float> mine(part.total), all(whole.total);
  model.init_params(mine.data(), 0, mine.size(), 7);
  reference.init_params(all.data(), 0, all.size(), 7);
  for (const LayoutMap::Piece& p : map.flat({0, part.total}))
    for (size_t i = 0; i < p.size; ++i) REQUIRE(mine[p.from + i] == all[p.to + i]);
}
