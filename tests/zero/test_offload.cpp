// Multi-rank (run under mpirun): offload moves the optimizer state and stage-3 parameter shards to
// host memory or NVMe files, and changes no bit of the results.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "comm/control_channel.hpp"
#include "comm/mpi_communicator.hpp"
#include "core/ledger.hpp"
#include "engine_harness.hpp"
#include "mpi_world.hpp"

using namespace zt;
using namespace zt::test;

namespace {

// A directory every rank sees, for offload files.
std::string nvme_dir(const std::string& name) {
  auto dir = std::filesystem::path(ZT_BINARY_DIR) / "test-runs" / "offload" / name;
  std::filesystem::create_directories(dir);
  return dir.string();
}

struct Offload {
  std::string optimizer = "none", params = "none";
};

config::Config offload_config(int stage, const std::string& dtype, int world_size, const Offload& o) {
  auto c = make_config({stage, dtype, world_size});
  c.zero.sub_group_size = 3000;  // rounds to 4096 elements: several sub-groups per shard
  c.zero.offload_optimizer.device = *kOffloadDeviceNames.find(o.optimizer);
  c.zero.offload_optimizer.buffer_count = 2;  // fewer buffers than sub-groups: slots are reused
  c.zero.offload_optimizer.nvme_path = nvme_dir("optimizer");
  if (stage == 3) {
    c.zero.offload_param.device = *kOffloadDeviceNames.find(o.params);
    c.zero.offload_param.buffer_count = 2;
    c.zero.offload_param.nvme_path = nvme_dir("params");
  }
  return c;
}

}  // namespace

TEST_CASE("offloaded training equals training without offload, bit for bit", "[engine][offload]") {
  auto& comm = world();
  const std::vector<Offload> kinds = {{"cpu", "none"}, {"nvme", "none"}, {"cpu", "cpu"}, {"nvme", "nvme"},
                                      {"none", "nvme"}};
  for (std::string dtype : {"fp32", "bf16"}) {
    for (int stage = 1; stage <= 3; ++stage) {
      RunResult reference = train(offload_config(stage, dtype, comm.world_size(), {}), comm, 3);
      for (const Offload& o : kinds) {
        if (stage != 3 && o.params != "none") continue;
        if (o.optimizer == "none" && o.params == "none") continue;
        INFO(dtype << " stage " << stage << " optimizer " << o.optimizer << " params " << o.params);
        RunResult r = train(offload_config(stage, dtype, comm.world_size(), o), comm, 3);
        CHECK(r.losses == reference.losses);
        REQUIRE(r.params.size() == reference.params.size());
        CHECK(std::memcmp(r.params.data(), reference.params.data(), r.params.size() * sizeof(float)) == 0);
      }
    }
  }
}

TEST_CASE("offloaded state is where the ledger says: pinned host memory, or a file", "[engine][offload][memory]") {
  auto& comm = world();
  for (const std::string device : {"cpu", "nvme"}) {
    auto c = offload_config(3, "bf16", comm.world_size(), {device, device});
    c.zero.offload_optimizer.buffer_count = 1;  // one sub-group in host memory at a time
    const auto before = MemoryLedger::instance().stats();
    Trainer trainer(c, comm);
    const auto after = MemoryLedger::instance().stats();
    auto delta = [&](MemSpace s, MemCategory k) { return after.cur(s, k) - before.cur(s, k); };
    const size_t S = trainer.engine().partition().shard_size();
    INFO(device);
    CHECK(delta(MemSpace::Device, MemCategory::Optimizer) == 0);
    CHECK(delta(MemSpace::Device, MemCategory::Params) == 0);
    if (device == "cpu") {
      CHECK(delta(MemSpace::Pinned, MemCategory::Optimizer) == 12 * S);
      CHECK(delta(MemSpace::Pinned, MemCategory::Params) == 2 * S);
    } else {
      // The files hold everything (in 4 KiB records); host memory holds buffer_count sub-groups.
      CHECK(delta(MemSpace::File, MemCategory::Optimizer) >= 12 * S);
      CHECK(delta(MemSpace::File, MemCategory::Params) >= 2 * S);
      CHECK(delta(MemSpace::Host, MemCategory::Optimizer) == 4096 * 12);
      CHECK(delta(MemSpace::Host, MemCategory::Optimizer) < 12 * S);
    }
    // The files are unlinked at once: nothing is left in nvme_path, even while they are in use.
    comm.control().barrier();  // every rank has made its files
    CHECK(std::filesystem::is_empty(c.zero.offload_optimizer.nvme_path));
    CHECK(std::filesystem::is_empty(c.zero.offload_param.nvme_path));
  }
}

TEST_CASE("offloaded optimizer state can be read and written by range, as checkpoints do", "[engine][offload]") {
  auto& comm = world();
  auto plain = offload_config(2, "bf16", comm.world_size(), {});
  auto offloaded = offload_config(2, "bf16", comm.world_size(), {"nvme", "none"});
  Trainer a(plain, comm), b(offloaded, comm);
  for (int64_t s = 1; s <= 2; ++s) {
    a.train_step(s);
    b.train_step(s);
  }
  const Range held = a.engine().held();
  REQUIRE(held.size() == b.engine().held().size());
  // Pieces that straddle sub-group boundaries read the same values.
  for (StateTensor t : {StateTensor::Master, StateTensor::AdamM, StateTensor::AdamV}) {
    std::vector<float> x(held.size()), y(held.size());
    a.engine().read_state(t, held, x.data());
    b.engine().read_state(t, {held.begin, held.begin + held.size() / 3}, y.data());
    b.engine().read_state(t, {held.begin + held.size() / 3, held.end}, y.data() + held.size() / 3);
    CHECK(std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0);
  }
  // Writing a modified master and publishing it reaches every rank's parameters.
  std::vector<float> master(held.size());
  b.engine().read_state(StateTensor::Master, held, master.data());
  for (float& w : master) w *= 0.5f;
  b.engine().write_state(StateTensor::Master, held, master.data());
  a.engine().write_state(StateTensor::Master, held, master.data());
  a.engine().publish_written_state();
  b.engine().publish_written_state();
  std::vector<float> pa(a.model().layout().total), pb(pa.size());
  a.engine().gather_master(pa.data());
  b.engine().gather_master(pb.data());
  CHECK(std::memcmp(pa.data(), pb.data(), pa.size() * sizeof(float)) == 0);
  // And training goes on identically from there.
  CHECK(a.train_step(3).loss == b.train_step(3).loss);
}
