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
