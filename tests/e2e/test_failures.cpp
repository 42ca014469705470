// Bad input reaches a multi-rank job: one clear message, a non-zero exit, no rank left behind.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>

#include "run_helpers.hpp"

using namespace zt::test;

TEST_CASE("a missing data file stops every rank with one message", "[e2e][failure]") {
  auto dir = fresh_dir("missing-data");
  int code = run_command(launch(2) + " --config zero2 --steps 3 --data " + dir + "/nope.bin", dir + "/out.log");
  std::string out = read_file(dir + "/out.log");
  INFO(out);
  CHECK(code != 0);
  CHECK(occurrences(out, dir + "/nope.bin: data file not found") == 1);
}

TEST_CASE("a corrupt llm.c token file is named with what is wrong", "[e2e][failure]") {
  auto dir = fresh_dir("corrupt-data");
  {
    std::ofstream f(dir + "/bad.bin", std::ios::binary);
    int32_t header[256] = {20240520, 1, 1000};  // claims 1000 tokens, holds 10
    f.write(reinterpret_cast<const char*>(header), sizeof(header));
    f.write("0123456789abcdefghij", 20);
  }
  int code = run_command(launch(2) + " --config zero1 --steps 3 --data " + dir + "/bad.bin", dir + "/out.log");
  std::string out = read_file(dir + "/out.log");
  INFO(out);
  CHECK(code != 0);
  CHECK(occurrences(out, dir + "/bad.bin") >= 1);
  CHECK(out.find("error") != std::string::npos);
}

TEST_CASE("resume latest with no checkpoint stops before training, saying why", "[e2e][failure]") {
  auto dir = fresh_dir("resume");
  int code = run_command(launch(2) + " --config zero2 --steps 3 --set training.resume=latest" +
                             " --set training.checkpoint_dir=" + dir + "/ckpt",
                         dir + "/out.log");
  std::string out = read_file(dir + "/out.log");
  INFO(out);
  CHECK(code != 0);
  CHECK(occurrences(out, "training.resume: \"latest\": no checkpoint in " + dir + "/ckpt") == 1);
  CHECK(out.find("| loss ") == std::string::npos);  // nothing trained from scratch in its place
}

TEST_CASE("--dry-run prints the per-rank memory plan and allocates nothing", "[e2e][dry-run]") {
  auto dir = fresh_dir("dry-run");
  const std::string out = run_status(launch(4) + " --config zero3 --dry-run --model gpt2-124m", dir + "/out.log", 0);
  INFO(out);
  CHECK(out.find("memory plan per rank: ZeRO stage 3, 4 ranks") != std::string::npos);
  CHECK(out.find("16Ψ/N") != std::string::npos);
  CHECK(out.find("| loss ") == std::string::npos);  // no training
}

TEST_CASE("training.comm_timeout beyond any run means no timeout", "[e2e][failure]") {
  auto dir = fresh_dir("comm-timeout-never");
  // Past the end of the clock's 64-bit nanoseconds (about 9.2e9 s): it used to wrap into the past.
  const std::string out =
      run_status(launch(2) + " --config zero2 --steps 3 --set training.comm_timeout=1e10", dir + "/out.log", 0);
  INFO(out);
  CHECK(out.find("done: 3 steps") != std::string::npos);
}

TEST_CASE("a monitor job_name is one directory name inside output_path", "[e2e][failure]") {
  auto dir = fresh_dir("job-name");
  for (const std::string monitor : {"csv_monitor", "tensorboard"})
    for (const std::string& job : std::vector<std::string>{"../../evil", dir + "/evil"}) {
      INFO(monitor << ".job_name " << job);
      const std::string out =
          run_status(std::string(ZT_ZEROTRAIN) + " --config zero2 --steps 2 --set " + monitor + ".enabled=true --set " +
                         monitor + ".output_path=" + dir + "/out/logs --set " + monitor + ".job_name=" + job,
                     dir + "/out.log", 2);
      INFO(out);
      CHECK(out.find(monitor + ".job_name: \"" + job + "\" is not a directory name (expected one path component") !=
            std::string::npos);
      CHECK_FALSE(std::filesystem::exists(dir + "/evil"));
      CHECK_FALSE(std::filesystem::exists(dir + "/out"));
    }
}

TEST_CASE("a config nested too deep is refused, naming the file", "[e2e][failure]") {
  auto dir = fresh_dir("deep-config");
  const std::string config = dir + "/deep.json";
  {
    // 100000 objects inside each other: copying such a value recursed until the stack ran out.
    std::ofstream f(config);
    f << "{\"train_micro_batch_size_per_gpu\": 1, \"x\": ";
    for (int i = 0; i < 100000; ++i) f << "{\"a\": ";
    f << "1" << std::string(100000, '}') << "}";
  }
  int code = run_command(std::string(ZT_ZEROTRAIN) + " --config " + config + " --steps 1", dir + "/out.log");
  std::string out = read_file(dir + "/out.log");
  INFO(out.substr(0, 2000));
  CHECK(code == 2);  // not 139, a segmentation fault
  CHECK(out.find(config + ": objects and arrays nested deeper than 100 levels") != std::string::npos);
}

TEST_CASE("an integer key kept in an int is range-checked before it is narrowed", "[e2e][failure]") {
  auto dir = fresh_dir("seq-len-wrap");
  const std::string out = run_status(
      std::string(ZT_ZEROTRAIN) + " --config zero2 --steps 1 --set data.seq_len=2147483648", dir + "/out.log", 2);
  INFO(out);
  CHECK(out.find("data.seq_len: 2147483648 exceeds model.max_seq_len 128") != std::string::npos);
}

TEST_CASE("--dry-run's figures are what the run allocates, at every stage", "[e2e][dry-run]") {
  auto dir = fresh_dir("dry-run-equals-run");
  // Three ranks and a vocabulary of 300 (padded to 384 rows): shards and padding are not round.
  // Expert parallelism: 4 ranks in groups of 2, each rank's experts over the 2 holding the same.
  const std::string experts = " --set model.preset=qwen3-moe-tiny --set expert_parallel.enabled=true "
                              "--set expert_parallel.autoep_size=2";
  const struct {
    int ranks;
    std::string preset, extra;
  } runs[] = {{3, "zero0", ""},      {3, "zero1", ""},      {3, "zero2", ""},      {3, "zero3", ""},
              {3, "zero3_offload", ""}, {4, "zero1", experts}, {4, "zero2", experts}, {4, "zero3", experts}};
  for (const auto& [ranks, preset, extra] : runs) {
    INFO(preset << extra);
    const std::string common =
        launch(ranks) + " --config " + preset + " --set model.vocab_size=300" + extra;
    REQUIRE(run_command(common + " --dry-run", dir + "/plan.log") == 0);
    // a run of its own: a file of its own
    const std::string metrics = dir + "/" + preset + (extra.empty() ? "" : "-ep") + ".jsonl";
    REQUIRE(run_command(common + " --steps 1 --set training.metrics=" + metrics, dir + "/run.log") == 0);
    const std::string plan = read_file(dir + "/plan.log");
    INFO(plan);
    Metrics m = read_metrics(metrics);
    REQUIRE(m.setup["memory"].size() == size_t(ranks));
    if (!extra.empty()) CHECK(plan.find("experts Ψ' = ") != std::string::npos);
    for (const std::string category : {"params", "grads", "optimizer", "offload"}) {
      std::smatch planned;
      const bool printed =
          std::regex_search(plan, planned, std::regex(category + R"( +\d+\.\d\d MiB \((\d+) bytes)"));
      const uint64_t bytes = printed ? std::stoull(planned[1]) : 0;  // offload is printed when there is some
      if (category != "offload") CHECK(printed);
      for (const auto& rank : m.setup["memory"]) {
        INFO(category << " rank " << rank["rank"]);
        CHECK(rank[category].get<uint64_t>() == bytes);
      }
    }
    // Transient buffers: a bound, which the set-up stays within.
    std::smatch bound;
    REQUIRE(std::regex_search(plan, bound, std::regex(R"(buffers +<= +(\d+\.\d\d) MiB)")));
    for (const auto& rank : m.setup["memory"])
      CHECK(double(rank["buffers"].get<uint64_t>()) / 1048576.0 <= std::stod(bound[1]) + 0.005);
  }
}

TEST_CASE("a run's peaks stay within --dry-run's plan with checkpoints and with nvme offload", "[e2e][dry-run]") {
  auto dir = fresh_dir("dry-run-bounds-peaks");
  const std::string nvme = dir + "/nvme";
  std::filesystem::create_directories(nvme);
  const std::string in_nvme = " --set zero_optimization.offload_optimizer.nvme_path=" + nvme +
                              " --set zero_optimization.offload_param.nvme_path=" + nvme;
  const std::vector<std::pair<std::string, std::string>> runs = {
      {"checkpoints", " --config zero2 --set training.checkpoint_dir=" + dir + "/ckpt --set training.save_interval=2"},
      {"nvme optimizer", " --config zero2 --set zero_optimization.offload_optimizer.device=nvme" + in_nvme},
      {"nvme optimizer and parameters",
       " --config zero3_offload --set zero_optimization.offload_optimizer.device=nvme" +
           std::string(" --set zero_optimization.offload_param.device=nvme") + in_nvme}};
  for (const auto& run : runs) {
    const auto& [name, options] = run;
    INFO(name);
    const std::string common = launch(2) + options + " --set zero_optimization.sub_group_size=8192";
    REQUIRE(run_command(common + " --dry-run", dir + "/plan.log") == 0);
    const std::string metrics = dir + "/m" + std::to_string(&run - runs.data()) + ".jsonl";  // a file per run
    REQUIRE(run_command(common + " --steps 4 --set training.metrics=" + metrics, dir + "/run.log") == 0);
    const std::string plan = read_file(dir + "/plan.log");
    INFO(plan << read_file(dir + "/run.log"));
    std::smatch buffers, offload;
    REQUIRE(std::regex_search(plan, buffers, std::regex(R"(buffers +<= +(\d+\.\d\d) MiB)")));
    const double bound = std::stod(buffers[1]) * 1048576.0;
    const bool offloads = std::regex_search(
        plan, offload, std::regex(R"(offload +\d+\.\d\d MiB \((\d+) bytes: (\d+) in host memory, (\d+) in files\))"));
    CHECK(offloads == (name != "checkpoints"));
    Metrics m = read_metrics(metrics);
    REQUIRE(m.summary["memory_peak"].size() == 2);
    const double psi = m.setup["num_params"].get<double>();
    for (const auto& rank : m.summary["memory_peak"]) {
      INFO("rank " << rank["rank"]);
      // Offloaded state is allocated once, in memory and files both: exactly as planned.
      CHECK(rank["offload"].get<uint64_t>() == (offloads ? std::stoull(offload[1]) : 0));
      CHECK(rank["files"].get<uint64_t>() == (offloads ? std::stoull(offload[3]) : 0));
      if (offloads) CHECK(std::stoull(offload[2]) + std::stoull(offload[3]) == std::stoull(offload[1]));
      // Transient buffers: within the bound, and the bound not far above them. Its loosest term is
      // stage 3's gather bound, up to all Ψ parameters in bf16 and fp32, which the toy model,
      // gathering one group at a time, never fills.
      const double peak = rank["buffers"].get<double>();
      const double gather_bound = name.find("parameters") != std::string::npos ? 6 * psi : 0;
      CHECK(peak <= bound + 0.005 * 1048576.0);
      CHECK(bound <= 1.2 * peak + gather_bound);
    }
  }
}

TEST_CASE("--dry-run warns when a rank's plan exceeds this machine's memory", "[e2e][dry-run]") {
  auto dir = fresh_dir("dry-run-too-big");
  // About 6.4e12 parameters: 100 TB of model states on one rank.
  const std::string out = run_status(std::string(ZT_ZEROTRAIN) + " --config zero2 --dry-run --set model.d_model=16384" +
                                         " --set model.n_layer=2000 --set model.n_head=128",
                                     dir + "/big.log", 0);
  INFO(out);
  CHECK(std::regex_search(out, std::regex(R"(warning: the plan needs \d+\.\d\d GiB of host memory per rank, )"
                                          R"(more than this machine's share: \d+\.\d\d GiB )"
                                          R"(\(MemTotal \d+\.\d\d GiB / 1 rank here\))")));
  CHECK(run_status(std::string(ZT_ZEROTRAIN) + " --config zero2 --dry-run", dir + "/small.log", 0)
            .find("more than this machine's share") == std::string::npos);
}

TEST_CASE("keys and values are shown with control characters escaped, never raw", "[e2e][failure]") {
  auto dir = fresh_dir("control-characters");
  const std::string config = dir + "/ds.json";
  // An unknown key holding a newline, a forged log line and a terminal colour sequence.
  { std::ofstream(config) << R"({"train_micro_batch_size_per_gpu": 1, "x\n[rank 0] info: forged\u001b[31m": 1})"; }
  std::string out = run_status(std::string(ZT_ZEROTRAIN) + " --config " + config + " --steps 1", dir + "/out.log", 0);
  INFO(out);
  CHECK(out.find(R"(x\n[rank 0] info: forged\x1b[31m: unknown key)") != std::string::npos);
  CHECK(out.find("\n[rank 0] info: forged") == std::string::npos);
  CHECK(out.find('\x1b') == std::string::npos);
  // A value echoed in an error: a file name with a newline.
  const int code = run_command(std::string(ZT_ZEROTRAIN) + " --config zero2 --steps 1 --data '" + dir + "/a\nb.bin'",
                               dir + "/out2.log");
  out = read_file(dir + "/out2.log");
  INFO(out);
  CHECK(code != 0);
  CHECK(out.find(dir + "/a\\nb.bin: data file not found") != std::string::npos);
}

TEST_CASE("a config path that is a directory, and an unreadable data file, say so", "[e2e][failure]") {
  auto dir = fresh_dir("config-dir");
  std::string out = run_status(std::string(ZT_ZEROTRAIN) + " --config " + dir + " --steps 1", dir + "/out.log", 2);
  INFO(out);
  CHECK(out.find("--config " + dir + ": is a directory, not a config file") != std::string::npos);

  // A file this process may not read: mode 000 for an ordinary user; root reads anything but a
  // write-only kernel setting.
  std::string unreadable = dir + "/secret.txt";
  { std::ofstream(unreadable) << "tokens\n"; }
  std::filesystem::permissions(unreadable, std::filesystem::perms::none);
  if (std::ifstream(unreadable)) unreadable = "/proc/sys/vm/drop_caches";
  if (std::ifstream(unreadable) || !std::filesystem::exists(unreadable)) {
    WARN("skipped: no file here that this user cannot read");
    return;
  }
  const int code =
      run_command(std::string(ZT_ZEROTRAIN) + " --config zero2 --steps 1 --data " + unreadable, dir + "/data.log");
  out = read_file(dir + "/data.log");
  INFO(out);
  CHECK(code != 0);
  CHECK(out.find(unreadable + ": cannot open data file: Permission denied") != std::string::npos);
}
