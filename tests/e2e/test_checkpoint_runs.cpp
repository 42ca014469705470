// Checkpoints through the zerotrain binary and scripts/launch.sh: a resumed job continues bit for
// bit; 4 ranks at stage 2 -> 2 ranks at stage 3 -> 3 ranks at stage 1 carry the full state over
// exactly; a rank killed during a save leaves the previous checkpoint and `latest`; damaged
// checkpoints and failed writes stop the job with the file named; export equals save_final.
#include <signal.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <thread>

#include "ckpt/checkpoint_dir.hpp"
#include "ckpt/checkpoint_reader.hpp"
#include "run_helpers.hpp"

using namespace zt::test;
namespace fs = std::filesystem;

namespace {

std::vector<double> losses(const std::string& metrics) {
  std::vector<double> l;
  for (auto& s : read_metrics(metrics).steps) l.push_back(s["loss"].get<double>());
  return l;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

size_t occurrences(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// The whole fp32 state of a checkpoint (master, m, v over every flat element), read back.
struct FullState {
  zt::CheckpointMeta meta;
  std::vector<float> tensors[3];
};

FullState read_state(const std::string& path) {
  const zt::CheckpointReader ckpt(zt::resolve_checkpoint(path));
  FullState s;
  s.meta = ckpt.meta();
  for (size_t i = 0; i < s.meta.shards.size(); ++i) ckpt.verify(i);
  for (int t = 0; t < 3; ++t) {
    s.tensors[t].resize(s.meta.flat_params);
    ckpt.read(zt::kShardTensors[t], {0, s.meta.flat_params}, s.tensors[t].data());
  }
  return s;
}

}  // namespace

TEST_CASE("a job resumed from its checkpoint continues bit for bit", "[e2e][checkpoint]") {
  auto dir = fresh_dir("ckpt-continue");
  const std::string common = launch(2) + " --config zero3 --steps 6 --set steps_per_print=1";
  int code = run_command(common + " --set training.save_interval=3 --set training.checkpoint_dir=" + dir +
                             "/a --set training.metrics=" + dir + "/a.jsonl",
                         dir + "/a.log");
  REQUIRE(code == 0);
  // A crash after step 4: the job is started again from the checkpoint of step 3.
  code = run_command(common + " --set training.resume=" + dir + "/a/step_00000003 --set training.checkpoint_dir=" +
                         dir + "/b --set training.metrics=" + dir + "/b.jsonl",
                     dir + "/b.log");
  std::string out = read_file(dir + "/b.log");
  INFO(out);
  REQUIRE(code == 0);
  const auto a = losses(dir + "/a.jsonl"), b = losses(dir + "/b.jsonl");
  REQUIRE(a.size() == 6);
  REQUIRE(b.size() == 3);
  CHECK(std::vector<double>(a.begin() + 3, a.end()) == b);
  for (int r = 0; r < 2; ++r) {
    const std::string shard = "/step_00000006/" + zt::shard_file_name(r, 2);
    CHECK(slurp(dir + "/a" + shard) == slurp(dir + "/b" + shard));
  }
}

TEST_CASE("4 ranks stage 2 -> 2 ranks stage 3 -> 3 ranks stage 1: the full state carries over exactly",
          "[e2e][checkpoint][reshard]") {
  auto dir = fresh_dir("ckpt-reshard");
  auto job = [&](int ranks, int stage, int steps, const std::string& from, const std::string& to,
                 const std::string& extra = "") {
    std::string cmd = launch(ranks) + " --config zero" + std::to_string(stage) + " --steps " + std::to_string(steps) +
                      " --set training.checkpoint_dir=" + dir + "/" + to + " --set training.metrics=" + dir + "/" +
                      to + ".jsonl" + extra;
    if (!from.empty()) cmd += " --set training.resume=" + dir + "/" + from;
    const int code = run_command(cmd, dir + "/" + to + ".log");
    INFO(read_file(dir + "/" + to + ".log"));
    REQUIRE(code == 0);
  };
  job(4, 2, 3, "", "c1");
  job(2, 3, 3, "c1", "c2");  // nothing left to train: it saves what it read, at 2 ranks
  job(3, 1, 3, "c2", "c3", " --set bf16.enabled=false");  // and from bf16 to fp32 training
  CHECK(occurrences(read_file(dir + "/c3.log"), "was saved by a bf16 run and this one trains in fp32: the fp32 "
                                                "master weights and Adam's moments carry over") == 1);
  const FullState s1 = read_state(dir + "/c1"), s2 = read_state(dir + "/c2"), s3 = read_state(dir + "/c3");
  CHECK(s1.meta.world_size == 4);
  CHECK(s2.meta.world_size == 2);
  CHECK(s3.meta.world_size == 3);
  CHECK(s3.meta.stage == 1);
  CHECK(s3.meta.dtype == "fp32");
  for (const FullState* s : {&s2, &s3}) {
    CHECK(s->meta.step == 3);
    CHECK(s->meta.optimizer_steps == s1.meta.optimizer_steps);
    CHECK(s->meta.loss_scaler.scale == s1.meta.loss_scaler.scale);
    for (int t = 0; t < 3; ++t) {
      REQUIRE(s->tensors[t].size() == s1.tensors[t].size());
      CHECK(std::memcmp(s->tensors[t].data(), s1.tensors[t].data(), s1.tensors[t].size() * sizeof(float)) == 0);
    }
  }
  // And training goes on from there at the next step.
  job(3, 1, 5, "c3", "c4", " --set bf16.enabled=false");
  Metrics m = read_metrics(dir + "/c4.jsonl");
  REQUIRE(m.steps.size() == 2);
  CHECK(m.steps.front()["step"] == 4);
}

TEST_CASE("a rank killed during a save leaves the previous checkpoint loadable and named by latest",
          "[e2e][checkpoint][crash]") {
  auto dir = fresh_dir("ckpt-killed");
  // Steps of a few tenths of a second, so that a save is still in flight when the rank dies.
  const std::string common = launch(2) + " --config zero2 --set model.d_model=256 --set model.n_layer=4 "
                                         "--set training.micro_batch_size=16 --set training.checkpoint_dir=" +
                             dir + "/ckpt";
  const std::string log = dir + "/out.log";
  Background job(common + " --steps 1000 --set training.save_interval=2", log);
  REQUIRE(wait_for_text(log, "checkpoint " + dir + "/ckpt/step_00000002: 2 shard files", 120));
  const std::string in_flight = dir + "/ckpt/step_00000004.tmp";
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!fs::exists(in_flight) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  REQUIRE(fs::exists(in_flight));
  pid_t rank = -1;
  for (auto& p : processes_mentioning(dir + "/ckpt"))
    if (p.find(": " ZT_ZEROTRAIN " ") != std::string::npos) rank = pid_t(std::stoi(p));
  REQUIRE(rank > 0);
  kill(rank, SIGKILL);
  const int code = job.wait(60);
  std::string out = read_file(log);
  INFO(out);
  CHECK(code != 0);
  CHECK(read_file(dir + "/ckpt/latest") == "step_00000002\n");
  CHECK_FALSE(fs::exists(dir + "/ckpt/step_00000004"));

  // The requeued job resumes from step 2 and cleans up what the dead save left.
  const int again = run_command(common + " --steps 3 --set training.resume=latest", dir + "/again.log");
  out = read_file(dir + "/again.log");
  INFO(out);
  CHECK(again == 0);
  CHECK(out.find("resuming from " + dir + "/ckpt/step_00000002") != std::string::npos);
  CHECK(out.find("training continues at step 3") != std::string::npos);
  CHECK_FALSE(fs::exists(in_flight));
  CHECK(read_file(dir + "/ckpt/latest") == "step_00000003\n");
}

TEST_CASE("damaged checkpoints stop every rank before training, naming the file", "[e2e][checkpoint][refuse]") {
  auto dir = fresh_dir("ckpt-damaged");
  const std::string common = launch(2) + " --config zero1";
  REQUIRE(run_command(common + " --steps 2 --set training.checkpoint_dir=" + dir + "/ckpt", dir + "/save.log") == 0);
  const std::string step = dir + "/ckpt/step_00000002";
  const std::string shard1 = step + "/shard-00001-of-00002.safetensors";
  auto resume = [&](const std::string& extra, const std::string& name) {
    const int code = run_command(common + " --steps 4 --set training.resume=latest --set training.checkpoint_dir=" + dir +
                                     "/ckpt" + extra,
                                 dir + "/" + name + ".log");
    std::string out = read_file(dir + "/" + name + ".log");
    INFO(out);
    CHECK(code == 1);
    CHECK(out.find("step     3/") == std::string::npos);  // nothing trained
    return out;
  };

  SECTION("a model of another shape") {
    const std::string out = resume(" --set model.d_model=32", "shape");
    CHECK(occurrences(out, step + ": saved from a model of another shape: tensor wte.weight is [256, 64] in the "
                               "checkpoint and [256, 32] in this model") == 1);
  }
  SECTION("a corrupt shard that only rank 1 reads: rank 0 does not wait for it") {
    std::string bytes = slurp(shard1);
    bytes[bytes.size() / 2] ^= 0x40;
    std::ofstream(shard1, std::ios::binary) << bytes;
    const std::string out = resume("", "corrupt");
    CHECK(occurrences(out, shard1 + ": checksum mismatch") == 1);
  }
  SECTION("a truncated shard") {
    fs::resize_file(shard1, fs::file_size(shard1) / 2);
    const std::string out = resume("", "truncated");
    CHECK(occurrences(out, shard1 + ": truncated:") == 1);
  }
}

TEST_CASE("a failed write stops the job naming the file; the previous checkpoint stays the latest",
          "[e2e][checkpoint][write-failure]") {
  auto dir = fresh_dir("ckpt-write-failure");
  const std::string common =
      std::string(ZT_ZEROTRAIN) + " --config zero2 --set training.checkpoint_dir=" + dir + "/ckpt";
  REQUIRE(run_command(common + " --steps 2", dir + "/first.log") == 0);
  // A file size limit makes writes past 256 KB fail (EFBIG), as a full disk would (ENOSPC); a
  // shard of the toy model is 1.5 MB. SIGXFSZ is ignored, so the write returns the error.
  const int code = run_command("sh -c 'trap \"\" XFSZ; ulimit -f 512; exec " + common +
                                   " --steps 4 --set training.resume=latest'",
                               dir + "/second.log");
  std::string out = read_file(dir + "/second.log");
  INFO(out);
  CHECK(code == 1);
  CHECK(occurrences(out, dir + "/ckpt/step_00000004.tmp/shard-00000-of-00001.safetensors.tmp: write of") == 1);
  CHECK(out.find(std::strerror(EFBIG)) != std::string::npos);
  CHECK(out.find(dir + "/ckpt/latest is unchanged") != std::string::npos);
  CHECK(read_file(dir + "/ckpt/latest") == "step_00000002\n");
  CHECK(read_state(dir + "/ckpt").meta.step == 2);
}

TEST_CASE("export writes the files save_final writes, in fp32 and bf16", "[e2e][checkpoint][export]") {
  auto dir = fresh_dir("ckpt-export");
  const std::string common = launch(2) + " --config zero2 --steps 3 --set training.checkpoint_dir=" + dir + "/ckpt";
  REQUIRE(run_command(common + " --set training.save_final=" + dir + "/final32", dir + "/train.log") == 0);
  // The same state again, saved in bf16: resumed at its last step, with nothing left to train.
  const int code = run_command(common + " --set training.resume=latest --set training.save_dtype=bf16 " +
                                   "--set training.save_final=" + dir + "/final16",
                               dir + "/bf16.log");
  INFO(read_file(dir + "/bf16.log"));
  REQUIRE(code == 0);
  for (auto [dtype, final_dir] : {std::pair{"fp32", "/final32"}, {"bf16", "/final16"}}) {
    const std::string out = dir + "/export-" + dtype;
    const int exported = run_command(std::string(ZT_ZEROTRAIN) + " export " + dir + "/ckpt -o " + out +
                                         " --dtype " + dtype,
                                     out + ".log");
    INFO(read_file(out + ".log"));
    REQUIRE(exported == 0);
    const std::string written = slurp(dir + final_dir + "/model.safetensors");
    CHECK(written.size() > 100000);
    CHECK(slurp(out + "/model.safetensors") == written);
    CHECK(slurp(out + "/config.json") == slurp(dir + final_dir + "/config.json"));
  }
}

TEST_CASE("init_from: what it cannot start from is named", "[e2e][checkpoint][init_from]") {
  auto dir = fresh_dir("ckpt-init-from");
  fs::create_directories(dir + "/empty");
  const int code = run_command(std::string(ZT_ZEROTRAIN) + " --config zero1 --steps 2 --set training.init_from=" + dir +
                                   "/empty",
                               dir + "/out.log");
  const std::string out = read_file(dir + "/out.log");
  INFO(out);
  CHECK(code == 1);
  CHECK(occurrences(out, "training.init_from: " + dir + "/empty: holds no model.safetensors, model.safetensors.index.json, meta.json or `latest`") ==
        1);
  CHECK(out.find("step     1/") == std::string::npos);
}
