// Multi-rank (run under mpirun): what the device layer promises the engine — buffers planned so
// that no step after the first allocates, memory counted per space, stage 3's gathers per group.
#include <catch2/catch.hpp>

#include <numeric>

#include "comm/mpi_communicator.hpp"
#include "core/ledger.hpp"
#include "engine_harness.hpp"
#include "model/gpt_layout.hpp"
#include "mpi_world.hpp"
#include "steady_allocations.hpp"

using namespace zt;
using namespace zt::test;

TEST_CASE("no step after the first allocates: buffers are planned, pooled and reused", "[engine][memory]") {
  auto& comm = world();
  for (std::string dtype : {"fp32", "bf16", "fp16"}) {
    for (int stage = 0; stage <= 3; ++stage) {
      for (int accumulation : {1, 2}) {
        RunSpec spec{stage, dtype, comm.world_size()};
        spec.accumulation = accumulation;
        auto c = make_config(spec);
        c.data.val = c.data.train;  // evaluation between steps uses the same buffers
        c.training.eval_interval = 1;
        Trainer trainer(c, comm);
        const uint64_t allocations = allocations_after_first_step(trainer);
        INFO(dtype << " stage " << stage << " accumulation " << accumulation);
        CHECK(allocations == 0);
      }
    }
  }
}

TEST_CASE("the ledger says where model states live: device memory, or host memory when offloaded", "[engine][memory]") {
  auto& comm = world();
  for (bool offload : {false, true}) {
    auto c = make_config({3, "bf16", comm.world_size()});
    if (offload) {
      c.zero.offload_optimizer.device = OffloadDevice::Cpu;
      c.zero.offload_param.device = OffloadDevice::Cpu;
    }
    const auto before = MemoryLedger::instance().stats();
    Trainer trainer(c, comm);
    const auto after = MemoryLedger::instance().stats();
    auto delta = [&](MemSpace s, MemCategory k) { return after.cur(s, k) - before.cur(s, k); };
    const size_t S = trainer.engine().partition().shard_size();
    INFO("offload " << offload);
    // pin_memory is true by default: offloaded state is page-locked host memory.
    const MemSpace held = offload ? MemSpace::Pinned : MemSpace::Device,
                   other = offload ? MemSpace::Device : MemSpace::Pinned;
    CHECK(delta(held, MemCategory::Optimizer) == 12 * S);
    CHECK(delta(held, MemCategory::Params) == 2 * S);
    CHECK(delta(other, MemCategory::Optimizer) == 0);
    CHECK(delta(other, MemCategory::Params) == 0);
    CHECK(delta(MemSpace::Device, MemCategory::Grads) == 2 * S);  // gradient shards stay on the device
    CHECK(after.offloaded() - before.offloaded() == (offload ? 14 * S : 0));
    // The category totals are the sums over spaces.
    CHECK(after.cur(MemCategory::Optimizer) - before.cur(MemCategory::Optimizer) == 12 * S);
  }
}

TEST_CASE("stage 3 gathers each block twice per step and the embeddings once per use", "[engine][comm]") {
  auto& comm = world();
  for (int64_t reuse : {0, 1}) {
    auto c = make_config({3, "bf16", comm.world_size()});
    c.model.shape.n_layer = 4;
    c.zero.stage3_max_reuse_distance = reuse;
    Trainer trainer(c, comm);
    trainer.train_step(1);
    const auto before = trainer.engine().group_gathers();
    trainer.train_step(2);
    const auto after = trainer.engine().group_gathers();
    REQUIRE(after.size() == trainer.model().layout().groups.size());
    INFO("stage3_max_reuse_distance " << reuse);
    // The embeddings serve the lookup, the LM head's forward and its backward (the lookup's
    // backward needs no parameter values); with a reuse distance that spans the LM head's forward
    // and backward, one gather serves both.
    CHECK(after[kEmbeddingsGroup] - before[kEmbeddingsGroup] == (reuse == 0 ? 3 : 2));
    for (size_t g = 1; g < after.size(); ++g) CHECK(after[g] - before[g] == 2);  // forward and backward
  }
}
