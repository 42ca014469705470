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

TEST_CASE("kept parameters cost 4 bytes each on every rank: the ledger equals the plan", "[engine][fp32][memory]") {
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
    CHECK(plan_memory(kept, N).params == m.params);
    CHECK(plan_memory(plain, N).params == p.params);
  }
  // fp32 training keeps no second copy.
  config::Config fp32 = make_config({2, "fp32", N});
  fp32.keep_in_fp32_modules = kKept;
  CHECK(plan_memory(fp32, N).params == plan_memory(make_config({2, "fp32", N}), N).params);
}
