// Multi-rank (run under mpirun): frozen parameters (training.freeze). They keep their parameter
// share and get no gradient buffer, no reduction and no optimizer state: the memory per rank, the
// bytes sent per step, and the stages' bit-identical results, measured.
#include <catch2/catch.hpp>

#include <cstring>

#include "comm/mpi_communicator.hpp"
#include "core/ledger.hpp"
#include "core/trainable_space.hpp"
#include "engine_harness.hpp"
#include "model_state_memory.hpp"
#include "mpi_world.hpp"
#include "self_communicator.hpp"
#include "train/memory_plan.hpp"

using namespace zt;
using namespace zt::test;

namespace {

// The token embedding (wpe, in the same group, trains), the second block's MLP and the final norm:
// frozen tensors at the start, inside and at the end of groups, and whole groups; every group is
// still fetched in backward, so stage 3 gathers what it gathers without freezing.
const std::vector<std::string> kFrozen = {"wte", "h.1.mlp", "ln_f"};

// The embeddings and the first block: backward stops at the second block (and stage 3 does not
// gather the first one again).
const std::vector<std::string> kFrozenBottom = {"wte", "wpe", "h.0"};

config::Config frozen_config(const RunSpec& spec, const std::vector<std::string>& frozen = kFrozen) {
  config::Config c = make_config(spec);
  c.training.freeze = frozen;
  return c;
}

// The flat elements the patterns freeze.
std::vector<Range> frozen_ranges(const ParamLayout& layout) {
  std::vector<Range> out;
  for (auto& g : layout.groups)
    for (auto& t : g.tensors)
      if (!t.trainable) out.push_back({t.offset, t.offset + t.numel()});
  return out;
}

}  // namespace

TEST_CASE("frozen parameters cost their parameter share only: the ledger equals the plan", "[engine][frozen][memory]") {
  auto& comm = world();
  const size_t N = size_t(comm.world_size());
  for (std::string dtype : {"bf16", "fp32"}) {
    for (int stage = 0; stage <= 3; ++stage) {
      const auto c = frozen_config({stage, dtype, comm.world_size()});
      const ModelStateBytes m = model_state_bytes(c, c.model.shape, comm, config::trained_parts(c));
      const Gpt model(c.model.shape, 2, 16, false, cpu_backend(), config::trained_parts(c));
      const size_t T = model.layout().trainable_numel();
      const Partition flat(model.layout().total, int(N), 0), train(T, int(N), 0);
      const size_t P = flat.padded(), Tp = train.padded();
      const size_t d = dtype == "bf16" ? 2 : 4, k = dtype == "bf16" ? 12 : 8;
      INFO(dtype << " stage " << stage << " N " << N << " P " << P << " T " << T);
      REQUIRE(T < model.layout().total);
      // Parameters: the flat share, and the optimizer's copy of its trainable range.
      CHECK(m.params == d * (stage < 3 ? P : P / N) + d * (stage == 0 ? Tp : Tp / N));
      CHECK(m.grads == d * (stage < 2 ? Tp : Tp / N));
      CHECK(m.optimizer == k * (stage == 0 ? Tp : Tp / N));
      const MemoryPlan plan = plan_memory(c, int(N));
      CHECK(plan.params == m.params);
      CHECK(plan.grads == m.grads);
      CHECK(plan.optimizer == m.optimizer);
      REQUIRE(plan.unfrozen);
      CHECK(plan.unfrozen->grads + plan.unfrozen->optimizer > plan.grads + plan.optimizer);
    }
  }
}

TEST_CASE("frozen elements are never reduced: bytes sent per step with training.freeze", "[engine][frozen][comm]") {
  auto& comm = world();
  const size_t N = size_t(comm.world_size());
  for (int stage = 0; stage <= 3; ++stage) {
    const auto c = frozen_config({stage, "bf16", comm.world_size()});
    Trainer trainer(c, comm);
    const CommStats traffic = second_step_traffic(trainer, comm);
    auto sent = [&](CommOp op) { return traffic.bytes(op); };
    const Engine& engine = trainer.engine();
    const size_t T = engine.trainable().numel();
    const size_t own_t = engine.train_partition().trained(comm.rank()).size();
    const size_t own = engine.partition().trained(comm.rank()).size();
    const size_t St = engine.train_partition().shard_size();
    const size_t norm_bytes = stage == 0 ? 0 : 8 * (N - 1);
    INFO("stage " << stage << " N " << N << " rank " << comm.rank() << " T " << T);
    // Reduce-scatter: the trainable elements only, each leaving its rank but the ones it owns.
    CHECK(sent(CommOp::ReduceScatter) == 2 * (T - own_t));
    // All-gather: stage 0 the reduced gradient shards of the trainable space (padding included);
    // stages 1-2 the updated trainable parameters, run by run (no padding); stage 3 every group's
    // flat piece in forward and backward, then the updated trainable parameters.
    const size_t gathered = stage == 0 ? 2 * St * (N - 1)
                            : stage < 3 ? 2 * own_t * (N - 1)
                                        : 2 * 2 * own * (N - 1) + 2 * own_t * (N - 1);
    CHECK(sent(CommOp::AllGather) == gathered + norm_bytes);
  }
}

TEST_CASE("with frozen parameters stages 0-3 give bit-identical results; frozen ones never change",
          "[engine][frozen][parity]") {
  auto& comm = world();
  for (const auto& frozen : {kFrozen, kFrozenBottom})
  for (std::string dtype : {"fp32", "bf16"}) {
    std::vector<float> reference;
    std::vector<double> reference_losses;
    for (int stage = 0; stage <= 3; ++stage) {
      RunSpec spec{stage, dtype, comm.world_size()};
      spec.overlap = stage != 1;
      Trainer trainer(frozen_config(spec, frozen), comm);
      const std::vector<float> start = gather_params(trainer);
      std::vector<double> losses;
      for (int s = 1; s <= 3; ++s) losses.push_back(trainer.train_step(s).loss);
      const std::vector<float> end = gather_params(trainer);
      INFO(dtype << " stage " << stage << " world " << comm.world_size());
      for (Range r : frozen_ranges(trainer.model().layout()))
        CHECK(std::memcmp(start.data() + r.begin, end.data() + r.begin, r.size() * sizeof(float)) == 0);
      CHECK(start != end);  // the rest trained
      if (stage == 0) {
        reference = end;
        reference_losses = losses;
        continue;
      }
      CHECK(losses == reference_losses);
      CHECK(std::memcmp(end.data(), reference.data(), end.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("freezing equals training everything and putting the frozen weights back after every step",
          "[engine][frozen][parity]") {
  auto& comm = world();
  for (int stage : {0, 3}) {
    RunSpec spec{stage, "fp32", comm.world_size()};
    auto frozen = frozen_config(spec);
    auto everything = make_config(spec);
    // The clipping norm is over what trains: without clipping the two runs' updates are the same.
    frozen.gradient_clipping = everything.gradient_clipping = 0;
    Trainer a(frozen, comm), b(everything, comm);
    const std::vector<Range> ranges = frozen_ranges(a.model().layout());
    const std::vector<float> initial = gather_params(b);
    Engine& eb = b.engine();
    for (int s = 1; s <= 3; ++s) {
      CHECK(a.train_step(s).loss == b.train_step(s).loss);
      // Put b's frozen weights back: its master holds what it updates (its shard).
      const Range held = eb.held();
      for (Range r : ranges) {
        const Range mine = r.intersect(held);
        if (!mine.empty()) eb.write_state(StateTensor::Master, mine, initial.data() + mine.begin);
      }
      eb.publish_written_state();
    }
    INFO("stage " << stage << " world " << comm.world_size());
    const std::vector<float> pa = gather_params(a), pb = gather_params(b);
    CHECK(std::memcmp(pa.data(), pb.data(), pa.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("N ranks with frozen parameters equal one process on the global batch", "[engine][frozen][parity]") {
  auto& comm = world();
  const int W = comm.world_size();
  for (int stage : {1, 3}) {
    RunSpec spec{stage, "fp32", W};
    spec.accumulation = 2;
    Trainer distributed(frozen_config(spec), comm);
    SelfCommunicator self;
    RunSpec single{0, "fp32", 1};
    single.micro = spec.micro * spec.accumulation * W;
    Trainer one(frozen_config(single), self);
    for (int s = 1; s <= 5; ++s)
      CHECK(distributed.train_step(s).loss == Approx(one.train_step(s).loss).epsilon(1e-5));
    INFO("stage " << stage << ", world " << W);
    CHECK(relative_difference(gather_params(distributed), gather_params(one)) < 1e-6);
  }
}

TEST_CASE("LoRA at stage 3: the ledger's model states per rank equal the plan, the base costs its share only",
          "[engine][frozen][lora][memory]") {
  auto& comm = world();
  const size_t N = size_t(comm.world_size());
  for (std::string dtype : {"bf16", "fp32"}) {
    config::Config c = make_config({3, dtype, comm.world_size()});
    c.lora.enabled = true;
    c.lora.r = 4;
    c.lora.target_modules = {"c_attn", "c_fc"};
    auto& ledger = MemoryLedger::instance();
    const auto before = ledger.stats();
    Trainer trainer(c, comm);
    const auto after = ledger.stats();
    trainer.train_step(1);  // (nothing of the model states is allocated by a step)
    const auto stepped = ledger.stats();
    auto held = [&](const MemStats& s, MemCategory k) {
      return s.cur(MemSpace::Device, k) - before.cur(MemSpace::Device, k);
    };
    const MemoryPlan plan = plan_memory(c, int(N));
    const size_t d = dtype == "bf16" ? 2 : 4, k = dtype == "bf16" ? 12 : 8;
    const size_t P = trainer.engine().partition().padded(), Tp = trainer.engine().train_partition().padded();
    INFO(dtype << " N " << N << " P " << P << " T " << trainer.engine().trainable().numel());
    REQUIRE(Tp * 5 < P);  // the adapters are a small part of the model
    CHECK(held(after, MemCategory::Params) == plan.params);
    CHECK(held(after, MemCategory::Grads) == plan.grads);
    CHECK(held(after, MemCategory::Optimizer) == plan.optimizer);
    CHECK(held(stepped, MemCategory::Params) == plan.params);
    // The adapters' activations (A·x of every block, their scratch): what the plan adds for them.
    config::Config plain = c;
    plain.lora.enabled = false;
    const auto plain_before = ledger.stats();
    {
      Trainer without(plain, comm);
      without.train_step(1);
      const size_t plain_held = ledger.stats().cur(MemSpace::Device, MemCategory::Activations) -
                                plain_before.cur(MemSpace::Device, MemCategory::Activations);
      CHECK(held(stepped, MemCategory::Activations) - plain_held ==
            plan.activations - plan_memory(plain, int(N)).activations);
      CHECK(plan.activations > plan_memory(plain, int(N)).activations);
    }
    // The base: its parameter share alone; gradients and optimizer state for the adapters only.
    CHECK(plan.params == d * P / N + d * Tp / N);
    CHECK(plan.grads == d * Tp / N);
    CHECK(plan.optimizer == k * Tp / N);
    REQUIRE(plan.unfrozen);
    CHECK(plan.unfrozen->grads == d * P / N);
  }
}

TEST_CASE("frozen parameters with offloaded optimizer state and parameter shards give the resident run's bits",
          "[engine][frozen][offload]") {
  auto& comm = world();
  const std::string dir = shared_dir("engine-frozen", "offload");
  for (int stage : {2, 3}) {
    RunSpec spec{stage, "bf16", comm.world_size()};
    Trainer resident(frozen_config(spec, kFrozenBottom), comm);
    config::Config c = frozen_config(spec, kFrozenBottom);
    c.zero.offload_optimizer.device = stage == 3 ? OffloadDevice::Nvme : OffloadDevice::Cpu;
    c.zero.offload_optimizer.nvme_path = dir;
    c.zero.sub_group_size = 2000;  // several sub-groups of the trainable shard
    if (stage == 3) {
      c.zero.offload_param.device = OffloadDevice::Nvme;
      c.zero.offload_param.nvme_path = dir;
    }
    Trainer offloaded(c, comm);
    for (int s = 1; s <= 3; ++s) CHECK(resident.train_step(s).loss == offloaded.train_step(s).loss);
    INFO("stage " << stage);
    const std::vector<float> a = gather_params(resident), b = gather_params(offloaded);
    CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
  }
}
