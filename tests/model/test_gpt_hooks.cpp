// The model's side of the ParamHooks contract: the order of fetch/release/grads/grads_ready, and
// that it touches parameters only between fetch and release and gradients only between grads and
// grads_ready (checked with hooks that hand out short-lived copies, as ZeRO stage 3 does).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "model/gpt.hpp"

using namespace zt;

namespace {

// Gathers a private copy of each group on fetch and poisons it with NaN on release; hands out a
// zeroed gradient buffer per group, adds it to the total on grads_ready and poisons it.
class TransientHooks : public ParamHooks {
public:
  explicit TransientHooks(const ParamLayout& layout, const float* params)
      : grad_total(layout.total, 0.0f), layout_(layout), params_(params) {}

  ConstView fetch(int g) override {
    log.push_back("fetch " + std::to_string(g));
    auto& copy = gathered_[g];
    REQUIRE(copy.empty());  // not fetched twice without a release
    const ParamGroup& group = layout_.groups[g];
    copy.assign(params_ + group.offset, params_ + group.offset + group.size);
    return {copy.data(), DType::F32, MemSpace::Host};
  }
  void release(int g) override {
    log.push_back("release " + std::to_string(g));
    auto& copy = gathered_[g];
    REQUIRE(!copy.empty());
    std::fill(copy.begin(), copy.end(), std::numeric_limits<float>::quiet_NaN());
    retired_.push_back(std::move(copy));  // keep the memory so a late read sees NaN, not a crash
    copy.clear();
  }
  View grads(int g) override {
    log.push_back("grads " + std::to_string(g));
    auto& buf = open_grads_[g];
    REQUIRE(buf.empty());
    buf.assign(layout_.groups[g].size, 0.0f);
    return {buf.data(), DType::F32, MemSpace::Host};
  }
  void grads_ready(int g) override {
    log.push_back("grads_ready " + std::to_string(g));
    auto& buf = open_grads_[g];
    REQUIRE(!buf.empty());
    const size_t off = layout_.groups[g].offset;
    for (size_t i = 0; i < buf.size(); i++) grad_total[off + i] += buf[i];
    std::fill(buf.begin(), buf.end(), std::numeric_limits<float>::quiet_NaN());
    retired_.push_back(std::move(buf));
    buf.clear();
  }

  std::vector<std::string> log;
  std::vector<float> grad_total;

private:
  const ParamLayout& layout_;
  const float* params_;
  std::map<int, std::vector<float>> gathered_, open_grads_;
  std::vector<std::vector<float>> retired_;
};

// Tokens below 50 for a micro-batch of n.
std::vector<int32_t> tokens(int n, int multiplier, int offset) {
  std::vector<int32_t> t(size_t(n), 0);
  for (int i = 0; i < n; i++) t[size_t(i)] = (i * multiplier + offset) % 50;
  return t;
}

// One forward pass through TransientHooks of a model with initialised weights, on a fixed batch.
struct HookedForward {
  HookedForward(Gpt& model, int B, int T)
      : resident(model.layout()), inputs(tokens(B * T, 7, 0)), targets(tokens(B * T, 11, 3)),
        hooks(model.layout(), resident.params.data()) {
    model.init_params(resident.params.data(), 0, model.layout().total, 3);
    loss = model.forward(inputs.data(), targets.data(), B, T, hooks);
  }
  ResidentParams resident;
  std::vector<int32_t> inputs, targets;
  TransientHooks hooks;
  float loss;
};

// "fetch g", "release g" for every group g from 0 to last.
std::vector<std::string> fetch_release_each(int last) {
  std::vector<std::string> log;
  for (int g = 0; g <= last; g++) {
    log.push_back("fetch " + std::to_string(g));
    log.push_back("release " + std::to_string(g));
  }
  return log;
}

// Same numbers as with all parameters resident: nothing was read after a release or written
// after grads_ready (either would have brought NaN in or lost a contribution).
void check_same_as_resident(Gpt& model, HookedForward& run, int B, int T) {
  ResidentParams& resident = run.resident;
  const float resident_loss = model.forward(run.inputs.data(), run.targets.data(), B, T, resident);
  model.backward(resident, 1.0f);
  REQUIRE(run.loss == resident_loss);
  REQUIRE(std::isfinite(run.loss));
  for (size_t i = 0; i < run.hooks.grad_total.size(); i++) REQUIRE(run.hooks.grad_total[i] == resident.grad[i]);
}

}  // namespace

TEST_CASE("GPT forward and backward follow the hook order of the ZeRO contract", "[model][hooks]") {
  for (bool recompute : {false, true}) {
    INFO("recompute " << recompute);
    GptShape shape{3, 2, 16, 50, 8};
    const int B = 2, T = 8, L = shape.n_layer;
    Gpt model(shape, B, T, recompute);
    HookedForward run(model, B, T);
    TransientHooks& hooks = run.hooks;
    std::vector<std::string> want = fetch_release_each(L + 1);
    want.push_back("fetch 0");  // LM head
    want.push_back("release 0");
    REQUIRE(hooks.log == want);

    hooks.log.clear();
    model.backward(hooks, 1.0f);
    want = {"fetch 0", "grads 0", "release 0"};
    for (int g = L + 1; g >= 1; g--)
      for (const char* e : {"fetch ", "grads ", "grads_ready ", "release "}) want.push_back(e + std::to_string(g));
    want.push_back("grads_ready 0");
    REQUIRE(hooks.log == want);

    check_same_as_resident(model, run, B, T);
  }
}

TEST_CASE("an untied LM head is its own group: fetched after the final norm, its gradient ready first",
          "[model][hooks]") {
  for (bool recompute : {false, true}) {
    INFO("recompute " << recompute);
    GptShape shape(2, 4, 16, 50, 8);
    shape.model_type = ModelType::Qwen3;
    shape.n_kv_head = 2;
    shape.head_dim = 6;
    shape.d_ff = 24;
    shape.attention_bias = true;
    shape.tied_head = false;
    const int B = 2, T = 8, L = shape.n_layer, head = L + 2;
    Gpt model(shape, B, T, recompute);
    REQUIRE(gpt_head_group(shape) == head);
    REQUIRE(model.layout().groups[size_t(head)].name == "lm_head");
    HookedForward run(model, B, T);
    TransientHooks& hooks = run.hooks;
    std::vector<std::string> want = fetch_release_each(L + 2);
    REQUIRE(hooks.log == want);

    hooks.log.clear();
    model.backward(hooks, 1.0f);
    want.clear();
    for (int g = L + 2; g >= 1; g--)
      for (const char* e : {"fetch ", "grads ", "grads_ready ", "release "}) want.push_back(e + std::to_string(g));
    want.push_back("grads 0");  // the lookup needs no parameter values
    want.push_back("grads_ready 0");
    REQUIRE(hooks.log == want);

    // The fetches are the model's fetch order, the one ZeRO stage 3 prefetches by.
    std::vector<int> fetched;
    for (int g = 0; g <= L + 2; g++) fetched.push_back(g);
    for (int g = L + 2; g >= 1; g--) fetched.push_back(g);
    REQUIRE(model.fetch_order() == fetched);

    check_same_as_resident(model, run, B, T);
  }
}
