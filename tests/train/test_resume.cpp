// Multi-rank (under mpirun): a run that resumes from a checkpoint continues exactly as the run that
// was never interrupted, through Trainer::run(), for every ZeRO stage in fp32, bf16 and fp16:
// the same losses, the same loss scale, and the same master weights and Adam moments, bit for bit.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "ckpt/checkpoint_reader.hpp"
#include "config/model_block.hpp"
#include "comm/control_channel.hpp"
#include "comm/mpi_communicator.hpp"
#include "engine_harness.hpp"
#include "mpi_world.hpp"
#include "step_records.hpp"

using namespace zt;
using namespace zt::test;
namespace fs = std::filesystem;

namespace {

struct Finished {
  std::vector<float> master;
  int64_t start_step = 0;
};

Finished run(const config::Config& c) {
  Trainer trainer(c, world());
  REQUIRE(trainer.run() == 0);
  Finished f;
  f.start_step = trainer.start_step();
  f.master.resize(trainer.engine().trainable().numel());  // what trains: all of it, or the unfrozen part
  trainer.engine().gather_master(f.master.data());
  return f;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

}  // namespace

TEST_CASE("save and resume continues bit for bit: every stage, fp32, bf16 and fp16", "[trainer][resume]") {
  auto& comm = world();
  const int W = comm.world_size();
  for (std::string dtype : {"fp32", "bf16", "fp16"})
    for (int stage = 0; stage <= 3; ++stage) {
      DYNAMIC_SECTION(dtype << " stage " << stage) {
        const std::string dir = shared_dir("resume", dtype + "-stage" + std::to_string(stage));
        config::Config straight = make_config({stage, dtype, W});
        straight.training.steps = 6;
        straight.training.save_interval = 3;
        straight.training.checkpoint_dir = dir + "/straight";
        straight.training.metrics = dir + "/straight.jsonl";
        // fp16: a scale that overflows at first, and a short window, so the scaler's state matters.
        straight.fp16.initial_scale_power = 17;
        straight.fp16.loss_scale_window = 2;
        const Finished a = run(straight);

        config::Config resumed = straight;  // the same command after a crash that followed step 3
        resumed.training.checkpoint_dir = dir + "/resumed";
        resumed.training.metrics = dir + "/resumed.jsonl";
        resumed.training.resume = {config::ResumeFrom::Path, dir + "/straight/step_00000003"};
        const Finished b = run(resumed);
        CHECK(a.start_step == 0);
        CHECK(b.start_step == 3);

        // The same master weights, bit for bit, in memory and in the files of step 6 (master, m, v).
        REQUIRE(a.master.size() == b.master.size());
        CHECK(std::memcmp(a.master.data(), b.master.data(), a.master.size() * sizeof(float)) == 0);
        const std::string shard = "/step_00000006/" + shard_file_name(comm.rank(), W);
        CHECK(slurp(dir + "/straight" + shard) == slurp(dir + "/resumed" + shard));
        CHECK(CheckpointReader(dir + "/resumed/step_00000006").meta().data ==
              CheckpointReader(dir + "/straight/step_00000006").meta().data);

        if (comm.rank() == 0) {
          const auto sa = step_records(straight.training.metrics), sb = step_records(resumed.training.metrics);
          REQUIRE(sa.size() == 6);
          REQUIRE(sb.size() == 3);
          int skipped = 0;
          for (size_t i = 0; i < 3; ++i) {
            const auto &x = sa[i + 3], &y = sb[i];
            CHECK(y["step"] == x["step"]);
            CHECK(y["loss"] == x["loss"]);
            CHECK(y["loss_scale"] == x["loss_scale"]);
            CHECK(y["skipped"] == x["skipped"]);
            CHECK(y["grad_norm"] == x["grad_norm"]);
          }
          for (auto& s : sa) skipped += s["skipped"].get<bool>();
          if (dtype == "fp16") {
            // The scaler was in the middle of its work at the checkpoint.
            CHECK(skipped > 0);
            CHECK(skipped < 6);
          }
        }
      }
    }
}

TEST_CASE("checkpoints carry offloaded state: nvme offload saves, resumes and hands over to no offload",
          "[trainer][resume][offload]") {
  auto& comm = world();
  const int W = comm.world_size();
  const std::string dir = shared_dir("resume", "offload");
  auto offloaded = [&](config::Config c) {
    c.zero.sub_group_size = 3000;  // several sub-groups of state per shard, in the file
    c.zero.offload_optimizer.device = OffloadDevice::Nvme;
    c.zero.offload_optimizer.buffer_count = 2;
    c.zero.offload_optimizer.nvme_path = dir;
    c.zero.offload_param.device = OffloadDevice::Nvme;
    c.zero.offload_param.nvme_path = dir;
    return c;
  };
  config::Config straight = make_config({3, "bf16", W});
  straight.training.steps = 6;
  straight.training.save_interval = 3;
  straight.training.checkpoint_dir = dir + "/straight";
  const Finished a = run(straight);

  // The offloaded run saves its state, read from its files, and is resumed from that checkpoint.
  config::Config first = offloaded(straight);
  first.training.steps = 3;
  first.training.checkpoint_dir = dir + "/offloaded";
  run(first);
  const std::string shard = "/step_00000003/" + shard_file_name(comm.rank(), W);
  CHECK(slurp(dir + "/offloaded" + shard) == slurp(dir + "/straight" + shard));

  for (bool offload_again : {true, false}) {
    INFO("resumed with offload " << offload_again);
    config::Config resumed = offload_again ? offloaded(straight) : straight;
    resumed.training.checkpoint_dir = dir + (offload_again ? "/again" : "/plain");
    resumed.training.resume = {config::ResumeFrom::Path, dir + "/offloaded/step_00000003"};
    const Finished b = run(resumed);
    CHECK(b.start_step == 3);
    CHECK(std::memcmp(a.master.data(), b.master.data(), a.master.size() * sizeof(float)) == 0);
  }
}

namespace {

// LoRA adapters (dropout on: its masks follow the step) on a base model from a Hugging Face
// directory (tests/fixtures/hf), or the seeded base; on synthetic tokens of its vocabulary.
config::Config lora_config(int stage, const std::string& dtype, bool base_from_dir) {
  config::Config c = make_config({stage, dtype, world().world_size()});
  if (base_from_dir) {
    const std::string dir = std::string(ZT_SOURCE_DIR) + "/tests/fixtures/hf/llama3_dir_fp32";
    c.model = config::resolve_model_argument(dir);
    c.training.init_from = dir;
    c.data.train = {"synthetic:vocab=200"};
    c.data.format = "synthetic";
  }
  c.lora.enabled = true;
  c.lora.r = 4;
  c.lora.alpha = 8;
  c.lora.dropout = 0.1;
  c.lora.target_modules = base_from_dir ? std::vector<std::string>{"q_proj", "v_proj", "down_proj"}
                                        : std::vector<std::string>{"c_attn", "c_fc"};
  c.training.steps = 6;
  c.training.save_interval = 3;
  return c;
}

}  // namespace

TEST_CASE("LoRA and frozen runs resume bit for bit: the checkpoint holds what trains, the base comes back",
          "[trainer][resume][lora]") {
  auto& comm = world();
  struct Case {
    std::string name;
    config::Config config;
  };
  std::vector<Case> cases{{"lora-dir-stage3-bf16", lora_config(3, "bf16", true)},
                          {"lora-seeded-stage1-fp32", lora_config(1, "fp32", false)}};
  config::Config frozen = make_config({2, "fp32", comm.world_size()});
  frozen.training.freeze = {"wte", "h.0"};
  frozen.training.steps = 6;
  frozen.training.save_interval = 3;
  cases.push_back({"freeze-stage2-fp32", frozen});
  for (Case& k : cases) {
    DYNAMIC_SECTION(k.name) {
      const std::string dir = shared_dir("resume", k.name);
      config::Config straight = k.config;
      straight.training.checkpoint_dir = dir + "/straight";
      straight.training.metrics = dir + "/straight.jsonl";
      const Finished a = run(straight);
      config::Config resumed = straight;
      resumed.training.checkpoint_dir = dir + "/resumed";
      resumed.training.metrics = dir + "/resumed.jsonl";
      resumed.training.resume = {config::ResumeFrom::Path, dir + "/straight/step_00000003"};
      const Finished b = run(resumed);
      CHECK(b.start_step == 3);
      // Only the trainable state is saved: the layout marks the frozen tensors.
      const CheckpointReader saved(dir + "/straight/step_00000003");
      CHECK(saved.meta().flat_params == saved.meta().layout.trainable_numel());
      CHECK(saved.meta().flat_params < saved.meta().layout.total);
      REQUIRE(a.master.size() == b.master.size());
      CHECK(std::memcmp(a.master.data(), b.master.data(), a.master.size() * sizeof(float)) == 0);
      const std::string shard = "/step_00000006/" + shard_file_name(comm.rank(), comm.world_size());
      CHECK(slurp(dir + "/straight" + shard) == slurp(dir + "/resumed" + shard));
      if (comm.rank() == 0) {
        const auto sa = step_records(straight.training.metrics), sb = step_records(resumed.training.metrics);
        REQUIRE(sb.size() == 3);
        for (size_t i = 0; i < 3; ++i) {
          CHECK(sb[i]["loss"] == sa[i + 3]["loss"]);
          CHECK(sb[i]["grad_norm"] == sa[i + 3]["grad_norm"]);
        }
      }
    }
  }
}

TEST_CASE("a LoRA checkpoint reshards: another stage reads what every rank saved; other adapters are refused",
          "[trainer][resume][lora]") {
  auto& comm = world();
  const std::string dir = shared_dir("resume", "lora-reshard");
  config::Config first = lora_config(3, "fp32", true);
  first.training.steps = 3;
  first.training.checkpoint_dir = dir + "/ck";
  const Finished a = run(first);
  for (int stage : {0, 2}) {
    config::Config again = lora_config(stage, "fp32", true);
    again.training.resume = {config::ResumeFrom::Path, dir + "/ck/step_00000003"};
    Trainer trainer(again, comm);
    std::vector<float> master(trainer.engine().trainable().numel());
    trainer.engine().gather_master(master.data());
    INFO("stage " << stage);
    REQUIRE(master.size() <= a.master.size());
    CHECK(std::memcmp(master.data(), a.master.data(), master.size() * sizeof(float)) == 0);
  }
  // Adapters on other modules: the checkpoint's layout is not this run's.
  config::Config other = lora_config(0, "fp32", true);
  other.lora.target_modules = {"k_proj"};
  other.training.resume = {config::ResumeFrom::Path, dir + "/ck/step_00000003"};
  CHECK_THROWS_AS(Trainer(other, comm), SetupFailed);
  // The same adapters with the base model trained as well: the checkpoint does not hold the base.
  config::Config unfrozen = lora_config(0, "fp32", true);
  unfrozen.lora.enabled = false;
  unfrozen.training.resume = {config::ResumeFrom::Path, dir + "/ck/step_00000003"};
  CHECK_THROWS_AS(Trainer(unfrozen, comm), SetupFailed);
  // A checkpoint holds no frozen base to start another LoRA run from.
  config::Config base_from_checkpoint = lora_config(0, "fp32", true);
  base_from_checkpoint.training.init_from = dir + "/ck/step_00000003";
  CHECK_THROWS_AS(Trainer(base_from_checkpoint, comm), SetupFailed);
}
