// LoRA adapters and frozen tensors in the model (model/lora.hpp): the adapters' gradients against
// finite differences (with dropout, whose mask is fixed by its seed), their update against the
// merged weights W + scale·B·A, PEFT's initialisation, the layout, and backward stopping below the
// lowest block that trains.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/rng.hpp"
#include "finite_difference.hpp"
#include "model/gpt.hpp"
#include "model/name_pattern.hpp"

using namespace zt;

namespace {

GptShape qwen3_shape() {
  GptShape s(2, 4, 32, 100, 16);
  s.model_type = ModelType::Qwen3;
  s.n_kv_head = 2;
  s.head_dim = 8;
  s.d_ff = 24;
  s.norm_eps = 1e-6;
  s.tied_head = false;
  return s;
}

TrainedParts lora(int r, std::vector<std::string> targets, double dropout = 0, bool rslora = false) {
  TrainedParts p;
  p.lora = LoraSpec{r, 6.0, dropout, rslora, std::move(targets)};
  return p;
}

// Random values of a size that carries every path's gradient well above fp32 noise; norm weights
// near 1; padded vocabulary rows zero.
void randomize(const Gpt& model, ResidentParams& params, uint64_t seed) {
  Rng rng(seed);
  const size_t real_rows = size_t(model.shape().vocab_size);
  for (auto& g : model.layout().groups)
    for (auto& t : g.tensors)
      for (size_t i = 0; i < t.numel(); i++) {
        float v = t.shape.size() == 1 ? float(0.5 + 0.3 * rng.normal()) : float(0.3 * rng.normal());
        if (has_vocabulary_rows(t.name) && i >= real_rows * t.shape[1]) v = 0;
        params.params[t.offset + i] = v;
      }
}

struct Batch {
  std::vector<int32_t> inputs, targets;
};
Batch random_batch(int n, int vocab, uint64_t seed) {
  Rng rng(seed);
  Batch b{std::vector<int32_t>(size_t(n)), std::vector<int32_t>(size_t(n))};
  for (int i = 0; i < n; i++) {
    b.inputs[size_t(i)] = int32_t(rng.below(uint64_t(vocab)));
    b.targets[size_t(i)] = int32_t(rng.below(uint64_t(vocab)));
  }
  return b;
}

// Hooks that record which groups the model fetches and asks gradients of.
class RecordingHooks : public ParamHooks {
public:
  explicit RecordingHooks(ResidentParams& inner) : inner_(inner) {}
  ConstView fetch(int g) override {
    fetched.push_back(g);
    return inner_.fetch(g);
  }
  void release(int g) override { inner_.release(g); }
  View grads(int g) override {
    graded.insert(g);
    return inner_.grads(g);
  }
  void grads_ready(int g) override { inner_.grads_ready(g); }
  std::vector<int> fetched;
  std::set<int> graded;

private:
  ResidentParams& inner_;
};

void check_adapter_gradients(const GptShape& shape, const TrainedParts& parts) {
  const int B = 2, T = 7;
  Gpt model(shape, B, 8, false, cpu_backend(), parts);
  ResidentParams params(model.layout());
  randomize(model, params, 5);
  if (parts.lora.dropout > 0) model.set_dropout_seed(77);
  const Batch batch = random_batch(B * T, shape.vocab_size, 9);
  auto loss_at = [&] { return double(model.forward(batch.inputs.data(), batch.targets.data(), B, T, params)); };
  loss_at();
  RecordingHooks hooks(params);
  model.backward(hooks, 1.0f);
  const std::vector<float> grad(params.grad.data(), params.grad.data() + params.grad.size());
  int checked = 0;
  for (size_t g = 0; g < model.layout().groups.size(); ++g)
    for (auto& t : model.layout().groups[g].tensors) {
      if (!t.trainable) {  // a group of frozen tensors alone is never asked for gradients
        if (!model.layout().group_trainable(g)) CHECK(hooks.graded.count(int(g)) == 0);
        continue;
      }
      std::vector<size_t> idx(t.numel());
      for (size_t i = 0; i < idx.size(); i++) idx[i] = t.offset + i;
      std::partial_sort(idx.begin(), idx.begin() + 2, idx.end(),
                        [&](size_t a, size_t b) { return std::abs(grad[a]) > std::abs(grad[b]); });
      for (int k = 0; k < 2; k++) {
        const size_t i = idx[size_t(k)];
        const double fd = test::central_difference(params.params[i], loss_at);
        INFO(t.name << " element " << i - t.offset << ": analytic " << grad[i] << ", finite difference " << fd);
        CHECK(grad[i] != 0.0f);
        CHECK(std::abs(fd - grad[i]) <= 2e-2 * std::abs(grad[i]) + 2e-4);
        checked++;
      }
    }
  CHECK(checked > 0);
}

// The weights of the base model with every adapter merged in: W + scale·B·A on the adapter's rows
// of the packed projection (columns of GPT-2's Conv1D [in, out] weights).
std::vector<float> merged(const Gpt& with, const ResidentParams& params, const Gpt& base) {
  std::vector<float> out(params.params.data(), params.params.data() + base.layout().total);
  const double scale = LoraSpec{4, 6.0, 0, false, {}}.scale();
  const bool conv1d = with.shape().model_type == ModelType::Gpt2;
  for (const LoraSite& s : lora_sites(with.shape(), {4, 6.0, 0, false, {"all-linear"}}))
    for (int l = 0; l < with.shape().n_layer; ++l) {
      const std::string block = with.layout().groups[size_t(gpt_block_group(l))].name;
      const TensorSpec* A = with.layout().find(block + "." + s.module + ".lora_A.weight");
      const TensorSpec* B = with.layout().find(block + "." + s.module + ".lora_B.weight");
      const TensorSpec* W = base.layout().find(block + "." + (conv1d ? s.module : s.module) + ".weight");
      REQUIRE((A && B && W));
      // Rows of the packed projection's weight where this site's output lies.
      for (int o = 0; o < s.out; ++o)
        for (int i = 0; i < s.in; ++i) {
          double d = 0;
          for (int k = 0; k < 4; ++k)
            d += double(params.params[B->offset + size_t(o) * 4 + size_t(k)]) *
                 params.params[A->offset + size_t(k) * size_t(s.in) + size_t(i)];
          const size_t at = conv1d ? W->offset + size_t(i) * size_t(s.width) + size_t(s.column + o)
                                   : W->offset + size_t(o) * size_t(s.in) + size_t(i);
          out[at] = float(out[at] + scale * d);
        }
    }
  return out;
}

}  // namespace

TEST_CASE("LoRA adapters' gradients agree with finite differences; the base gets none", "[model][lora][gradcheck]") {
  SECTION("qwen3, every projection (packed q/k/v and gate/up slices)") {
    check_adapter_gradients(qwen3_shape(), lora(3, {"all-linear"}));
  }
  SECTION("qwen3, some projections, dropout through a fixed mask") {
    check_adapter_gradients(qwen3_shape(), lora(2, {"k_proj", "o_proj", "up_proj"}, 0.25));
  }
  SECTION("gpt2: c_attn, both c_proj, c_fc (the GELU unfused around them)") {
    check_adapter_gradients(GptShape(2, 2, 16, 40, 8), lora(2, {"all-linear"}, 0.1, true));
  }
  SECTION("frozen tensors by name pattern, without adapters") {
    TrainedParts parts;
    parts.freeze = {"model.embed_tokens", "model.layers.1.mlp", "model.layers.*.self_attn.{q,k}_norm"};
    check_adapter_gradients(qwen3_shape(), parts);
  }
}

TEST_CASE("the adapters' update equals the merged weights W + scale·B·A", "[model][lora]") {
  for (const GptShape& shape : {qwen3_shape(), GptShape(2, 2, 16, 40, 8)}) {
    const int B = 2, T = 6;
    Gpt with(shape, B, T, false, cpu_backend(), lora(4, {"all-linear"}));
    Gpt base(shape, B, T);
    ResidentParams p(with.layout());
    randomize(with, p, 11);
    ResidentParams q(base.layout());
    const std::vector<float> m = merged(with, p, base);
    std::copy(m.begin(), m.end(), q.params.data());
    const Batch batch = random_batch(B * T, shape.vocab_size, 3);
    const float a = with.forward(batch.inputs.data(), batch.targets.data(), B, T, p);
    const float b = base.forward(batch.inputs.data(), batch.targets.data(), B, T, q);
    INFO(kModelTypeNames.name(shape.model_type) << " with adapters " << a << ", merged " << b);
    CHECK(a == Approx(b).epsilon(1e-5));
    float max_diff = 0, max_logit = 0;
    for (size_t i = 0; i < size_t(B * T) * size_t(with.padded_vocab()); ++i) {
      max_diff = std::max(max_diff, std::abs(with.logits()[i] - base.logits()[i]));
      max_logit = std::max(max_logit, std::abs(base.logits()[i]));
    }
    CHECK(max_diff <= 1e-5f * max_logit);
  }
}

TEST_CASE("PEFT's initialisation: A uniform within 1/sqrt(in), B zero, the model unchanged", "[model][lora]") {
  const GptShape shape = qwen3_shape();
  Gpt with(shape, 2, 8, false, cpu_backend(), lora(16, {"q_proj", "down_proj"}));
  Gpt base(shape, 2, 8);
  std::vector<float> init(with.layout().total);
  with.init_params(init.data(), 0, init.size(), 42);
  double sum_sq = 0;  // of every A element as a fraction of its bound
  size_t count = 0;
  for (auto& g : with.layout().groups)
    for (auto& t : g.tensors) {
      if (t.name.find("lora_") == std::string::npos) continue;
      const float* v = init.data() + t.offset;
      if (t.name.find("lora_B") != std::string::npos) {
        CHECK(std::all_of(v, v + t.numel(), [](float x) { return x == 0.0f; }));
        continue;
      }
      const double bound = 1.0 / std::sqrt(double(t.shape[1]));
      for (size_t i = 0; i < t.numel(); ++i) {
        CHECK(std::abs(v[i]) <= bound);
        sum_sq += double(v[i]) * v[i] / (bound * bound);
      }
      count += t.numel();
    }
  CHECK(count == 2 * 16 * (32 + 24));
  CHECK(sum_sq / double(count) == Approx(1.0 / 3).epsilon(0.08));  // the variance of U(-1, 1)
  // The base tensors start as the base model's, and with B = 0 the output is the same bits.
  std::vector<float> base_init(base.layout().total);
  base.init_params(base_init.data(), 0, base_init.size(), 42);
  REQUIRE(std::equal(base_init.begin(), base_init.end(), init.begin()));
  ResidentParams p(with.layout()), q(base.layout());
  std::copy(init.begin(), init.end(), p.params.data());
  std::copy(base_init.begin(), base_init.end(), q.params.data());
  const Batch batch = random_batch(16, shape.vocab_size, 1);
  CHECK(with.forward(batch.inputs.data(), batch.targets.data(), 2, 8, p) ==
        base.forward(batch.inputs.data(), batch.targets.data(), 2, 8, q));
}

TEST_CASE("the training layout: adapter groups after the model's, everything else frozen", "[model][lora][layout]") {
  const GptShape shape = qwen3_shape();
  const ParamLayout base = make_gpt_layout(shape);
  const ParamLayout layout = make_training_layout(shape, lora(4, {"q_proj", "v_proj"}));
  REQUIRE(layout.groups.size() == base.groups.size() + size_t(shape.n_layer));
  for (size_t g = 0; g < base.groups.size(); ++g) {
    CHECK(layout.groups[g].offset == base.groups[g].offset);
    CHECK_FALSE(layout.group_trainable(g));
  }
  const ParamGroup& a = layout.groups[size_t(lora_group(shape, 1))];
  CHECK(a.name == "model.layers.1.lora");
  std::vector<std::string> names;
  for (auto& t : a.tensors) names.push_back(t.name);
  CHECK(names == std::vector<std::string>{"model.layers.1.self_attn.q_proj.lora_A.weight",
                                          "model.layers.1.self_attn.q_proj.lora_B.weight",
                                          "model.layers.1.self_attn.v_proj.lora_A.weight",
                                          "model.layers.1.self_attn.v_proj.lora_B.weight"});
  CHECK(a.tensors[0].shape == std::vector<size_t>{4, 32});
  CHECK(a.tensors[1].shape == std::vector<size_t>{32, 4});  // q: 4 heads of 8
  CHECK(a.tensors[3].shape == std::vector<size_t>{16, 4});  // v: 2 heads of 8
  CHECK(layout.trainable_numel() == layout.total - base.total);
  CHECK_THROWS_WITH(make_training_layout(shape, lora(4, {"c_attn"})),
                    Catch::Contains("lora.target_modules") && Catch::Contains("\"c_attn\" is not a projection of a "
                                                                              "qwen3 block"));
  TrainedParts nothing_left;
  nothing_left.freeze = {"*"};
  CHECK_THROWS_WITH(make_training_layout(shape, nothing_left), Catch::Contains("nothing would train"));
}

TEST_CASE("backward stops below the lowest block that trains; fetch_order says what is fetched",
          "[model][lora][frozen]") {
  const GptShape shape = qwen3_shape();
  const Batch batch = random_batch(16, shape.vocab_size, 4);
  for (const std::vector<std::string>& frozen :
       std::vector<std::vector<std::string>>{{}, {"model.embed_tokens"}, {"model.embed_tokens", "model.layers.0"}}) {
    TrainedParts parts;
    parts.freeze = frozen;
    Gpt model(shape, 2, 8, false, cpu_backend(), parts);
    Gpt full(shape, 2, 8);
    ResidentParams p(model.layout()), q(full.layout());
    randomize(model, p, 2);
    std::copy(p.params.data(), p.params.data() + p.params.size(), q.params.data());
    RecordingHooks hooks(p);
    model.forward(batch.inputs.data(), batch.targets.data(), 2, 8, hooks);
    model.backward(hooks, 1.0f);
    full.forward(batch.inputs.data(), batch.targets.data(), 2, 8, q);
    full.backward(q, 1.0f);
    INFO("frozen " << frozen.size());
    CHECK(hooks.fetched == model.fetch_order());
    // Every trainable tensor's gradient is the full model's, bit for bit.
    for (auto& g : model.layout().groups)
      for (auto& t : g.tensors)
        if (t.trainable)
          CHECK(std::equal(p.grad.data() + t.offset, p.grad.data() + t.offset + t.numel(), q.grad.data() + t.offset));
  }
  // Nothing of block 0 or the embeddings is fetched in backward when neither trains.
  TrainedParts parts;
  parts.freeze = {"model.embed_tokens", "model.layers.0"};
  const std::vector<int> order = Gpt(shape, 2, 8, false, cpu_backend(), parts).fetch_order();
  const std::vector<int> backward(order.begin() + shape.n_layer + 3, order.end());
  CHECK(std::count(backward.begin(), backward.end(), gpt_block_group(0)) == 0);
}

TEST_CASE("name patterns: segments, stars, ranges and choices; malformed ones refused", "[model][frozen]") {
  CHECK(NamePattern("model.embed_tokens").matches("model.embed_tokens.weight"));
  CHECK_FALSE(NamePattern("model.embed").matches("model.embed_tokens.weight"));  // whole segments
  CHECK(NamePattern("model.layers.{0-3}").matches("model.layers.3.mlp.up_proj.weight"));
  CHECK_FALSE(NamePattern("model.layers.{0-3}").matches("model.layers.13.mlp.up_proj.weight"));
  CHECK_FALSE(NamePattern("model.layers.{0-3}").matches("model.layers.03.mlp.up_proj.weight"));
  CHECK(NamePattern("model.layers.*.self_attn.{q,v}_proj").matches("model.layers.7.self_attn.v_proj.bias"));
  CHECK_FALSE(NamePattern("model.layers.*.self_attn.{q,v}_proj").matches("model.layers.7.self_attn.k_proj.bias"));
  CHECK(NamePattern("*.*.*.mlp").matches("model.layers.2.mlp.down_proj.weight"));
  CHECK(NamePattern("h.{0,2}.attn").matches("h.2.attn.c_attn.bias"));
  CHECK(NamePattern("lm_head.weight").matches("lm_head.weight"));
  CHECK_FALSE(NamePattern("lm_head.weight.x").matches("lm_head.weight"));
  CHECK_THROWS_WITH(NamePattern("model..layers"), Catch::Contains("empty segment"));
  CHECK_THROWS_WITH(NamePattern("model.layers.{3-1}"), Catch::Contains("{3-1} is not a range of integers"));
  CHECK_THROWS_WITH(NamePattern("model.layers.{0-3"), Catch::Contains("without its"));
  CHECK_THROWS_WITH(NamePattern(""), Catch::Contains("empty pattern"));
}

TEST_CASE("FLOPs per token: frozen weights cost no gradient of their own, frozen bottom blocks no backward",
          "[model][lora][frozen]") {
  const GptShape shape = qwen3_shape();
  const Gpt full(shape, 2, 8);
  const size_t attention = size_t(shape.q_width()) * 8;
  TrainedParts parts;
  parts.freeze = {"model.embed_tokens", "model.layers.0"};
  const Gpt bottom(shape, 2, 8, false, cpu_backend(), parts);
  // Block 0 forward only (2 per parameter, 4 per attention element), the head frozen (4), the rest as before.
  const size_t block = shape.block_params(), head = size_t(shape.vocab_size) * size_t(shape.d_model);
  CHECK(full.flops_per_token() - bottom.flops_per_token() == 4 * block + 8 * attention);
  (void)head;
  const Gpt adapted(shape, 2, 8, false, cpu_backend(), lora(4, {"q_proj"}));
  // Every base weight 4 (backward reaches every block: adapters everywhere), the adapters 6.
  const size_t adapters = adapted.layout().trainable_numel();
  CHECK(adapted.flops_per_token() ==
        4 * (full.num_params() - (shape.tied_head ? 0 : head)) + 6 * adapters + 12 * size_t(shape.n_layer) * attention);
}

TEST_CASE("The LM head's FLOPs per row: all of flops_per_token that grows with the vocabulary, trained or frozen",
          "[model][lora][frozen][flops]") {
  // The lookup multiplies nothing, so the head is the only part of a token's FLOPs that grows with V.
  auto head_share = [](const GptShape& shape, const TrainedParts& parts) {
    GptShape wider = shape;
    wider.vocab_size += 1;
    const Gpt model(shape, 2, 8, false, cpu_backend(), parts), more(wider, 2, 8, false, cpu_backend(), parts);
    CHECK(model.head_flops_per_row() * size_t(shape.vocab_size + 1) ==
          more.head_flops_per_row() * size_t(shape.vocab_size));
    return (more.flops_per_token() - model.flops_per_token()) * size_t(shape.vocab_size);
  };
  GptShape tied = qwen3_shape();
  tied.tied_head = true;
  for (const GptShape& shape : {qwen3_shape(), tied}) {
    TrainedParts frozen_head;
    frozen_head.freeze = {shape.tied_head ? "model.embed_tokens" : "lm_head"};
    for (const TrainedParts& parts : {TrainedParts{}, lora(4, {"q_proj"}), frozen_head}) {
      const Gpt model(shape, 2, 8, false, cpu_backend(), parts);
      INFO("tied " << shape.tied_head << ", frozen " << model.layout().has_frozen());
      CHECK(model.head_flops_per_row() == head_share(shape, parts));
    }
  }
}
