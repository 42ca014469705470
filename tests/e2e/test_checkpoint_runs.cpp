// Checkpoints through the zerotrain binary and scripts/launch.sh: a resumed job continues bit for
// bit; 4 ranks at stage 2 -> 2 ranks at stage 3 -> 3 ranks at stage 1 carry the full state over
// exactly; a rank killed during a save leaves the previous checkpoint and `latest`; damaged
// checkpoints and failed writes stop the job with the file named; export equals save_final, and
// refuses a recorded config of another layout as eval does; expert parallelism checkpoints and
// exports the whole model and resumes at another group size or none; shards
// read as one stream train as their concatenation and resume mid-stream at another world size.
#include <signal.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <fstream>
#include <thread>

#include "ckpt/checkpoint_dir.hpp"
#include "ckpt/checkpoint_reader.hpp"
#include "ckpt/dir_lock.hpp"
#include "ckpt/safetensors.hpp"
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
    ckpt.read(zt::kStateTensors[t], {0, s.meta.flat_params}, s.tensors[t].data());
  }
  return s;
}

}  // namespace

TEST_CASE("a job resumed from its checkpoint continues bit for bit", "[e2e][checkpoint]") {
  auto dir = fresh_dir("ckpt-continue");
  const std::string common = launch(2) + " --config zero3 --steps 6 --set training.logging_steps=1";
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

TEST_CASE("shards read as one stream train as the concatenated file, and resume mid-stream at another world size",
          "[e2e][checkpoint][shards]") {
  auto dir = fresh_dir("ckpt-shards");
  // The first 200000 bytes of the shipped corpus, whole and as two shards split at byte 3500: step 4
  // (windows 12..15 of 256 tokens, in file order) reads across the boundary.
  const std::string corpus = read_file(std::string(ZT_SOURCE_DIR) + "/data/tinytext/train.txt").substr(0, 200000);
  std::ofstream(dir + "/whole.txt") << corpus;
  std::ofstream(dir + "/part_000001.txt") << corpus.substr(0, 3500);
  std::ofstream(dir + "/part_000002.txt") << corpus.substr(3500);
  // 4 windows per step at any world size: accumulation 2 on 2 ranks, 1 on 4.
  const std::string common = " --config zero2 --steps 6 --set bf16.enabled=false --set data.shuffle=false"
                             " --set train_batch_size=8 --set train_micro_batch_size_per_gpu=2";
  auto job = [&](int ranks, const std::string& name, const std::string& extra) {
    const std::string accumulation = " --set gradient_accumulation_steps=" + std::to_string(4 / ranks);
    const int code = run_command(launch(ranks) + common + accumulation + extra + " --set training.metrics=" + dir +
                                     "/" + name + ".jsonl",
                                 dir + "/" + name + ".log");
    INFO(read_file(dir + "/" + name + ".log"));
    REQUIRE(code == 0);
    return losses(dir + "/" + name + ".jsonl");
  };
  const auto whole = job(2, "whole", " --data " + dir + "/whole.txt");
  const auto shards = job(2, "shards", " --data '" + dir + "/part_*.txt' --set training.save_interval=3" +
                                           " --set training.checkpoint_dir=" + dir + "/ckpt");
  REQUIRE(whole.size() == 6);
  CHECK(shards == whole);  // bit for bit
  const zt::CheckpointReader saved(dir + "/ckpt/step_00000003");
  CHECK(saved.meta().data["next_window"] == 12);
  CHECK(saved.meta().data["files"].size() == 2);
  CHECK(saved.meta().data["files"][0]["tokens"] == 3500);

  // Resumed at step 3 on 4 ranks: steps 4 to 6 read the windows the uninterrupted run read. (The
  // sums run in another order on 4 ranks, so the losses agree to rounding; other windows would
  // differ in the second digit.)
  const auto resumed = job(4, "resumed",
                           " --set 'data.train=[\"" + dir + "/part_000001.txt\",\"" + dir +
                               "/part_000002.txt\"]' --set training.resume=" + dir + "/ckpt/step_00000003");
  REQUIRE(resumed.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    INFO("step " << i + 4 << ": " << resumed[i] << " against " << whole[i + 3]);
    CHECK(std::abs(resumed[i] - whole[i + 3]) <= 1e-5 * whole[i + 3]);
  }
  CHECK(read_file(dir + "/resumed.log").find("data files changed") == std::string::npos);

  // A pattern matching nothing: one error naming it, before anything runs.
  const std::string pattern = dir + "/fineweb_train_*.bin";
  const int code = run_command(std::string(ZT_ZEROTRAIN) + " --data '" + pattern + "' --steps 1", dir + "/none.log");
  CHECK(code != 0);
  CHECK(read_file(dir + "/none.log").find("--data " + pattern + ": data.train: " + pattern +
                                         ": the pattern matches no file") != std::string::npos);
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
    const std::string out = run_status(
        common + " --steps 4 --set training.resume=latest --set training.checkpoint_dir=" + dir + "/ckpt" + extra,
        dir + "/" + name + ".log", 1);
    INFO(out);
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
  }  SECTION("meta.json with its step edited") {
    std::string meta = slurp(step + "/meta.json");
    const size_t at = meta.find("\"step\": 2,");
    REQUIRE(at != std::string::npos);
    meta.replace(at, 10, "\"step\": 1,");
    std::ofstream(step + "/meta.json", std::ios::binary) << meta;
    const std::string out = resume("", "edited");
    CHECK(occurrences(out, step + "/meta.json: checksum mismatch") == 1);
  }
  SECTION("binary junk in latest: shown escaped") {
    std::ofstream(dir + "/ckpt/latest", std::ios::binary) << "\xfe\xff\x1b[2Jstep\n";
    const std::string out = resume("", "junk");
    CHECK(occurrences(out, dir + "/ckpt/latest: \"\\xfe\\xff\\x1b[2Jstep\\n\" is not the name of a step directory") ==
          1);
    CHECK(out.find("\x1b[2J") == std::string::npos);  // no raw escape sequence reached the terminal
  }
}

TEST_CASE("a second job on a checkpoint_dir or nvme_path in use is refused naming the holder; a clean run leaves no "
          "lock",
          "[e2e][checkpoint][lock]") {
  auto dir = fresh_dir("ckpt-lock");
  const std::string ckpt = dir + "/ckpt";
  const std::string common = launch(2) + " --config zero1 --set training.checkpoint_dir=" + ckpt;
  REQUIRE(run_command(common + " --steps 2", dir + "/first.log") == 0);
  CHECK_FALSE(fs::exists(ckpt + "/zerotrain.lock"));  // released at the end
  CHECK(slurp(ckpt + "/latest") == "step_00000002\n");

  const zt::LockHolder me = zt::this_process_holder();
  const std::string holder = "pid " + std::to_string(me.pid) + " on host " + me.host + ", started ";
  {
    zt::DirLock running(ckpt, "training.checkpoint_dir");  // as a job that still runs holds it
    const std::string out = run_status(common + " --steps 4 --set training.resume=auto", dir + "/second.log", 2);
    INFO(out);
    CHECK(occurrences(out, "error: training.checkpoint_dir: " + ckpt + " is in use by another job: " + holder) == 1);
    CHECK(out.find("step     1/") == std::string::npos);  // nothing trained
    CHECK(slurp(ckpt + "/latest") == "step_00000002\n");
  }
  {
    fs::create_directories(dir + "/swap");
    zt::DirLock running(dir + "/swap", "zero_optimization.offload_optimizer.nvme_path");
    const std::string out =
        run_status(std::string(ZT_ZEROTRAIN) +
                       " --config zero2 --steps 1 --set zero_optimization.offload_optimizer.device=nvme "
                       "--set zero_optimization.offload_optimizer.nvme_path=" +
                       dir + "/swap",
                   dir + "/nvme.log", 2);
    INFO(out);
    CHECK(occurrences(out, "error: zero_optimization.offload_optimizer.nvme_path: " + dir +
                               "/swap is in use by another job: " + holder) == 1);
  }
  // A lock left by a job that was killed is taken over by the next, with a warning.
  zt::LockHolder gone = me;
  gone.pid = 1 << 22;  // PID_MAX_LIMIT: no process has it
  std::ofstream(ckpt + "/zerotrain.lock") << zt::lock_file_text(gone);
  const std::string out = run_status(common + " --steps 3 --set training.resume=auto", dir + "/takeover.log", 0);
  INFO(out);
  CHECK(occurrences(out, "training.checkpoint_dir: taking over the lock " + ckpt + "/zerotrain.lock of a job that is "
                         "gone (pid 4194304") == 1);
  CHECK_FALSE(fs::exists(ckpt + "/zerotrain.lock"));
  CHECK(slurp(ckpt + "/latest") == "step_00000003\n");
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

// Expert parallelism keeps each rank's own experts, and checkpoints the whole model: a checkpoint
// of 2 ranks in groups of 2 resumes on 4 ranks in groups of 4 and on 1 rank without expert
// parallelism (the same global batch of 8 rows each time), the losses those of the run that never
// stopped; its export is save_final's and, bit for bit, what a run without expert parallelism saves
// of the same checkpoint, every expert under its own name; the weights those of training without
// expert parallelism within fp32 rounding (as Adam's first steps amplify it: a parameter whose
// gradient is near zero moves by up to lr either way).
TEST_CASE("expert parallelism: a checkpoint resumes at another group size or none, and exports the whole model",
          "[e2e][checkpoint][expert_parallel]") {
  auto dir = fresh_dir("ckpt-expert-parallel");
  auto job = [&](int ranks, int group, const std::string& name, const std::string& extra) {
    std::string cmd = launch(ranks) + " --config zero2 --steps 4 --set model.preset=qwen3-moe-tiny" +
                      " --set train_micro_batch_size_per_gpu=2 --set gradient_accumulation_steps=" +
                      std::to_string(4 / ranks) + " --set training.metrics=" + dir + "/" + name + ".jsonl" + extra;
    if (group > 1)
      cmd += " --set expert_parallel.enabled=true --set expert_parallel.autoep_size=" + std::to_string(group);
    const int code = run_command(cmd, dir + "/" + name + ".log");
    INFO(read_file(dir + "/" + name + ".log"));
    REQUIRE(code == 0);
    return losses(dir + "/" + name + ".jsonl");
  };
  const std::vector<double> split =
      job(2, 2, "split",
          " --set training.save_interval=2 --set training.checkpoint_dir=" + dir + "/split --set training.save_final=" +
              dir + "/final");
  const std::vector<double> whole = job(1, 1, "whole", " --set training.save_final=" + dir + "/whole-final");
  const std::vector<double> wider = job(4, 4, "wider", " --set training.resume=" + dir + "/split/step_00000002");
  const std::vector<double> none = job(1, 1, "none", " --set training.resume=" + dir + "/split/step_00000002");
  // The last checkpoint again without expert parallelism, with nothing left to train.
  job(1, 1, "same", " --set training.resume=" + dir + "/split/step_00000004 --set training.save_final=" + dir +
                        "/same-final");
  REQUIRE(split.size() == 4);
  REQUIRE(whole.size() == 4);
  for (const std::vector<double>* resumed : {&wider, &none}) {
    REQUIRE(resumed->size() == 2);  // steps 3 and 4
    for (size_t k = 0; k < 2; ++k) CHECK(std::abs((*resumed)[k] - split[k + 2]) <= 1e-5 * split[k + 2]);
  }
  for (size_t k = 0; k < 4; ++k) CHECK(std::abs(whole[k] - split[k]) <= 1e-5 * split[k]);
  // The checkpoint records the whole layout: every expert, in its block.
  const zt::ParamLayout recorded = zt::CheckpointReader(zt::resolve_checkpoint(dir + "/split")).meta().layout;
  CHECK(recorded.find("model.layers.0.mlp.experts.3.down_proj.weight") != nullptr);
  for (const zt::ParamGroup& g : recorded.groups) CHECK(g.domain == 0);
  const std::string out = dir + "/export";
  const int exported = run_command(std::string(ZT_ZEROTRAIN) + " export " + dir + "/split -o " + out, out + ".log");
  INFO(read_file(out + ".log"));
  REQUIRE(exported == 0);
  CHECK(slurp(out + "/model.safetensors") == slurp(dir + "/final/model.safetensors"));
  CHECK(slurp(out + "/model.safetensors") == slurp(dir + "/same-final/model.safetensors"));
  CHECK(slurp(out + "/config.json") == slurp(dir + "/same-final/config.json"));
  const zt::SafetensorsReader got(out + "/model.safetensors"), want(dir + "/whole-final/model.safetensors");
  REQUIRE(got.tensors().size() == want.tensors().size());
  CHECK(got.find("model.layers.0.mlp.experts.3.down_proj.weight") != nullptr);
  for (const zt::SafetensorsEntry& t : want.tensors()) {
    INFO(t.name);
    const zt::SafetensorsEntry* mine = got.find(t.name);
    REQUIRE(mine != nullptr);
    REQUIRE(mine->shape == t.shape);
    std::vector<float> a(t.numel()), b(t.numel());
    got.read_f32(*mine, a.data());
    want.read_f32(t, b.data());
    double norm = 0, diff = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      norm += double(b[i]) * b[i];
      diff += double(a[i] - b[i]) * (a[i] - b[i]);
    }
    CHECK(std::sqrt(diff) <= 1e-4 * std::sqrt(norm));
  }
}

TEST_CASE("a checkpoint whose recorded config gives another layout: export and eval refuse it with one line",
          "[e2e][checkpoint][export][refuse]") {
  auto dir = fresh_dir("ckpt-layout");
  REQUIRE(run_command(launch(1) + " --config zero1 --steps 2 --set 'training.freeze=[\"wte.weight\"]' " +
                          "--set training.checkpoint_dir=" + dir + "/ckpt",
                      dir + "/train.log") == 0);
  // The recorded config no longer freezes what the shards leave out (meta.json's checksum kept right).
  const std::string step = dir + "/ckpt/step_00000002";
  zt::CheckpointMeta meta = zt::read_meta(step);
  meta.config["training"]["freeze"] = nlohmann::json::array();
  std::ofstream(step + "/meta.json", std::ios::binary) << zt::meta_file_text(meta);
  const std::string line =
      step + ": tensor wte.weight is frozen in the checkpoint and trains in this run (training.freeze and the lora "
             "block decide what trains";
  const std::string zerotrain = ZT_ZEROTRAIN;
  for (const auto& [name, command] :
       {std::pair{"export", zerotrain + " export " + dir + "/ckpt -o " + dir + "/out"},
        {"eval", zerotrain + " eval --model " + dir + "/ckpt --data " + ZT_SOURCE_DIR + "/data/tinytext/val.txt"}}) {
    const int code = run_command(command, dir + "/" + name + ".log");
    const std::string out = read_file(dir + "/" + name + ".log");
    INFO(name << ": " << out);
    CHECK(code == 1);
    CHECK(occurrences(out, line) == 1);
  }
  CHECK(!fs::exists(dir + "/out"));
}

TEST_CASE("init_from: what it cannot start from is named", "[e2e][checkpoint][init_from]") {
  auto dir = fresh_dir("ckpt-init-from");
  fs::create_directories(dir + "/empty");
  const std::string out =
      run_status(std::string(ZT_ZEROTRAIN) + " --config zero1 --steps 2 --set training.init_from=" + dir + "/empty",
                 dir + "/out.log", 1);
  INFO(out);
  CHECK(occurrences(
            out, "training.init_from: " + dir +
                     "/empty: holds no model.safetensors, model.safetensors.index.json, meta.json or `latest`") == 1);
  CHECK(out.find("step     1/") == std::string::npos);
}
