// Multi-rank (run under mpirun): parameters kept in fp32 under bf16 (data_types.keep_in_fp32_modules).
// The model reads their fp32 master values bit for bit at every stage, the others the master's bf16
// rounding; the plan counts the fp32 copy at 4 bytes per element, as the ledger measures it.
#include <catch2/catch.hpp>

#include <algorithm>

#include "core/ledger.hpp"
#include "engine_harness.hpp"
#include "model_state_memory.hpp"
#include "mpi_world.hpp"
#include "train/memory_plan.hpp"

using namespace zt;
using namespace zt::test;

namespace {

// A whole tensor inside a block and a whole group at the end.
const std::vector<std::string> kKept = {"h.0.attn.c_attn.weight", "ln_f"};

config::Config kept_config(int stage, int world, const std::string& dtype = "bf16") {
  config::Config c = make_config({stage, dtype, world});
  c.keep_in_fp32_modules = kKept;
  return c;
}

float rounded(DType dtype, float x) {
  float y = x;
  cpu_backend().vector.round_to(dtype, &y, 1);
  return y;
}

}  // namespace

TEST_CASE("kept parameters: the model reads their fp32 master at every stage, the others its 16-bit rounding",
          "[engine][fp32]") {
  auto& comm = world();
  for (const std::string dtype_name : {"bf16", "fp16"}) {
    const DType dtype = dtype_name == "bf16" ? DType::BF16 : DType::F16;
    std::vector<double> stage0_losses;
    // Stage 4: stage 3 with parameters and optimizer state offloaded to host memory.
    for (int stage = 0; stage <= 4; ++stage) {
      INFO(dtype_name << " stage " << stage << " N " << comm.world_size());
      config::Config c = kept_config(std::min(stage, 3), comm.world_size(), dtype_name);
      if (stage == 4) {
        c.zero.offload_param.device = OffloadDevice::Cpu;
        c.zero.offload_optimizer.device = OffloadDevice::Cpu;
      }
      Trainer trainer(c, comm);
      std::vector<double> losses;
      for (int s = 1; s <= 3; ++s) losses.push_back(trainer.train_step(s).loss);
      const ParamLayout& layout = trainer.model().layout();
      std::vector<float> master(layout.total);
      trainer.engine().gather_master(master.data());
      const std::vector<float> read = gather_params(trainer);
      size_t kept = 0, off_bf16 = 0, mismatched = 0;
      for (const ParamGroup& g : layout.groups)
        for (const TensorSpec& t : g.tensors)
          for (size_t i = t.offset; i < t.offset + t.numel(); ++i) {
            const float want = t.keep_fp32 ? master[i] : rounded(dtype, master[i]);
            mismatched += std::memcmp(&read[i], &want, sizeof(float)) != 0;
            if (t.keep_fp32) {
              ++kept;
              off_bf16 += master[i] != rounded(dtype, master[i]);
            }
          }
      CHECK(kept == layout.find("h.0.attn.c_attn.weight")->numel() + 2 * 25);
      CHECK(mismatched == 0);
      CHECK(off_bf16 > kept / 2);  // trained fp32 values, not 16-bit ones
      // Every stage reads the same bits: the same losses.
      if (stage == 0) stage0_losses = losses;
      CHECK(losses == stage0_losses);
    }
    // Without the key the same run computes with other values.
    config::Config plain = make_config({0, dtype_name, comm.world_size()});
    CHECK(train(plain, comm, 3).losses != stage0_losses);
  }
}

TEST_CASE("kept parameters cost 4 bytes each on every rank, their gradients 4 more: the ledger equals the plan",
          "[engine][fp32][memory]") {
  auto& comm = world();
  const int N = comm.world_size();
  for (int stage = 0; stage <= 3; ++stage) {
    INFO("stage " << stage << " N " << N);
    const config::Config kept = kept_config(stage, N), plain = make_config({stage, "bf16", N});
    const ModelStateBytes m = model_state_bytes(kept, kept.model.shape, comm, config::trained_parts(kept));
    const ModelStateBytes p = model_state_bytes(plain, plain.model.shape, comm);
    const Gpt model(kept.model.shape, 2, 16, false, cpu_backend(), config::trained_parts(kept));
    const size_t fp32 = model.layout().fp32_numel();
    CHECK(fp32 == model.layout().find("h.0.attn.c_attn.weight")->numel() + 2 * 25);
    CHECK(m.params == p.params + 4 * fp32);
    CHECK(m.grads == p.grads + 4 * fp32);  // and their gradients, in fp32 beside the others
    CHECK(plan_memory(kept, N).params == m.params);
    CHECK(plan_memory(kept, N).grads == m.grads);
    CHECK(plan_memory(plain, N).params == p.params);
  }
  // fp32 training keeps no second copy.
  config::Config fp32 = make_config({2, "fp32", N});
  fp32.keep_in_fp32_modules = kKept;
  CHECK(plan_memory(fp32, N).params == plan_memory(make_config({2, "fp32", N}), N).params);
}

namespace {

// One group: a kept tensor and one that is not, of the same shape, given the same gradients.
ParamLayout kept_and_plain() {
  ParamLayout layout;
  ParamGroup& g = layout.groups.emplace_back();
  g.name = "h.0";
  for (const char* name : {"h.0.mlp.gate.weight", "h.0.mlp.other.weight"}) {
    TensorSpec t;
    t.name = name;
    t.offset = layout.total;
    t.shape = {6, 16};
    t.weight_decay = true;
    t.keep_fp32 = t.name == "h.0.mlp.gate.weight";
    layout.total += t.numel();
    g.size += t.numel();
    g.tensors.push_back(t);
  }
  return layout;
}

// Near 1, in steps bf16 cannot hold (its spacing there is 2^-7): a 16-bit sum of them rounds.
float micro_gradient(int rank, int micro, size_t i) {
  return 1.0f + float(i % 13) * 0x1p-11f + float(micro) * 0x1p-13f + float(rank) * 0x1p-12f;
}

}  // namespace

TEST_CASE("kept parameters' gradients accumulate and reduce in fp32: the fp32 run's, where the bf16 ones differ",
          "[engine][fp32][grads]") {
  auto& comm = world();
  const ParamLayout layout = kept_and_plain();
  const size_t n = layout.groups[0].tensors[0].numel();
  // With betas 0 and eps 1 one AdamW step moves a parameter by lr · g / (|g| + 1): the master after
  // it shows the gradient it was given.
  auto run = [&](DType dtype, int stage, bool offload) {
    EngineOptions o;
    o.stage = stage;
    o.dtype = o.comm_dtype = dtype;
    o.gradient_accumulation_steps = 4;
    o.adam_eps = 1.0;
    o.reduce_bucket_size = 37;  // buckets that cut the tensors
    o.allgather_bucket_size = 41;
    o.param_persistence_threshold = 0;
    if (offload) {
      o.offload_optimizer.device = OffloadDevice::Cpu;
      if (stage == 3) o.offload_param.device = OffloadDevice::Cpu;
    }
    Engine engine(o, layout, comm, cpu_backend(), cpu_backend().vector,
                  [](float* dst, size_t, size_t count) { std::fill(dst, dst + count, 0.0f); });
    for (int m = 0; m < 4; ++m) {
      engine.begin_micro_batch();
      const View g = engine.grads(0);
      REQUIRE(g.dtype == DType::F32);
      auto* values = static_cast<float*>(g.data);
      for (size_t i = 0; i < layout.total; ++i) values[i] += micro_gradient(comm.rank(), m, i % n);
      engine.grads_ready(0);
    }
    const UpdateResult r = engine.step(1.0, 0.0, 0.0);
    std::vector<float> master(layout.total);
    engine.gather_master(master.data());
    return std::make_pair(master, r.grad_norm);
  };
  const auto [reference, reference_norm] = run(DType::F32, 0, false);
  for (int stage = 0; stage <= 4; ++stage) {
    INFO("bf16 stage " << stage << " N " << comm.world_size());
    const auto [master, norm] = run(DType::BF16, std::min(stage, 3), stage == 4);
    double kept = 0, plain = 0;  // the largest relative difference from the fp32 run's master
    for (size_t i = 0; i < n; ++i) {
      kept = std::max(kept, std::abs(double(master[i]) - reference[i]) / std::abs(double(reference[i])));
      plain = std::max(plain, std::abs(double(master[n + i]) - reference[n + i]) / std::abs(double(reference[n + i])));
    }
    CHECK(kept <= 1e-6);  // fp32 rounding
    CHECK(plain > 1e-4);  // bf16's
    CHECK(norm > 0);
  }
}
