// The zerotrain binary with training.device cuda, one rank without a launcher: it trains, says
// where, writes the metrics (MFU against the GPU's peak), and refuses what the GPU cannot do.
// Built as test_gpu_zerotrain_emulated, it runs zerotrain_emulated, whose CUDA backend runs on the
// CPU (tests/kernels_cuda/cuda_emulator.hpp): shorter sequences and runs keep it to seconds.
#include <catch2/catch.hpp>

#include <cmath>
#include <algorithm>
#include <cstdio>
#include <regex>
#include <string>
#include <vector>

#include "run_helpers.hpp"

using namespace zt::test;

namespace {

#ifdef ZT_TEST_EMULATED
constexpr bool kEmulated = true;
const std::string kDevice = "CUDA emulated on the CPU";
#else
constexpr bool kEmulated = false;
const std::string kDevice = "NVIDIA";
#endif
int steps(int n) { return kEmulated ? n / 3 : n; }

std::string zerotrain(const std::string& dir, const std::string& args, const std::string& model = "toy",
                      const std::string& device = "cuda") {
  return std::string(ZT_ZEROTRAIN) + " --model " + model + " --set training.device=" + device +
         " --set data.seq_len=" + (kEmulated ? "32" : "64") + " --set training.lr=3e-3 --set training.eval_interval=0" +
         " --set training.metrics=" + dir + "/metrics.jsonl " + args;
}

double mean_loss(const Metrics& m, size_t from, size_t count) {
  double sum = 0;
  for (size_t i = from; i < from + count; ++i) sum += m.steps[i]["loss"].get<double>();
  return sum / double(count);
}

// The mean loss of the last 5 steps (of a quarter, in shorter runs) against the first.
double loss_drop(const Metrics& m) {
  const size_t n = m.steps.size(), k = std::min<size_t>(5, n / 4);
  return mean_loss(m, 0, k) - mean_loss(m, n - k, k);
}

}  // namespace

TEST_CASE("zerotrain trains on the GPU in bf16 and fp32 and reports MFU against the GPU's peak", "[gpu][e2e]") {
  for (std::string dtype : {"bf16", "fp32"}) {
    const auto dir = fresh_dir("gpu-zero2-" + dtype);
    const std::string bf16 = dtype == "bf16" ? "true" : "false";
    const std::string cmd =
        zerotrain(dir, "--config zero2 --steps " + std::to_string(steps(60)) + " --set bf16.enabled=" + bf16);
    INFO(cmd);
    const std::string log = run_ok(cmd, dir + "/out.log");
    INFO(log);
    CHECK(log.find("device: " + kDevice) != std::string::npos);
    CHECK(log.find("CUDA device 0 of") != std::string::npos);
    Metrics m = read_metrics(dir + "/metrics.jsonl");
    REQUIRE(m.steps.size() == size_t(steps(60)));
    CHECK(m.setup["dtype"] == dtype);
    CHECK(loss_drop(m) > 1.0);
    // A GPU of the peak table gives a finite MFU; any other says how to set its peak.
    if (log.find("not in the GPU table") == std::string::npos) {
      REQUIRE(m.summary["mfu"].is_number());
      CHECK(m.summary["mfu"].get<double>() > 0);
      CHECK(m.summary["mfu"].get<double>() < 1);
    } else {
      CHECK(log.find("ZT_PEAK_TFLOPS") != std::string::npos);
    }
  }
}

TEST_CASE("ZeRO-3 with offloaded parameters and optimizer state trains on the GPU", "[gpu][e2e][offload]") {
  const auto dir = fresh_dir("gpu-zero3-offload");
  const std::string cmd =
      zerotrain(dir, "--config zero3_offload --steps " + std::to_string(steps(40)) + " --set bf16.enabled=true");
  INFO(cmd);
  const int code = run_command(cmd, dir + "/out.log");
  INFO(read_file(dir + "/out.log"));
  REQUIRE(code == 0);
  Metrics m = read_metrics(dir + "/metrics.jsonl");
  REQUIRE(m.steps.size() == size_t(steps(40)));
  CHECK(m.setup["memory"][0]["offload"].get<uint64_t>() > 0);
  CHECK(loss_drop(m) > 0.5);
}

TEST_CASE("--dry-run on the GPU plans its activations in bf16 and its total against the GPU's memory", "[gpu][e2e]") {
  const auto dir = fresh_dir("gpu-dry-run");
  const std::string common = zerotrain(dir, "--config zero1 --set bf16.enabled=true --set data.seq_len=96" +
                                                std::string(" --set train_micro_batch_size_per_gpu=3"));
  REQUIRE(run_command(common + " --dry-run", dir + "/plan.log") == 0);
  REQUIRE(run_command(common + " --steps 1", dir + "/run.log") == 0);
  const std::string plan = read_file(dir + "/plan.log");
  INFO(plan << read_file(dir + "/run.log"));
  CHECK(plan.find("GPU memory (" + kDevice) != std::string::npos);
  std::smatch planned;
  REQUIRE(std::regex_search(
      plan, planned, std::regex(R"(activations +\d+\.\d\d MiB \((\d+) bytes\) +micro-batch 3 x 96 tokens, bf16)")));
  Metrics m = read_metrics(dir + "/metrics.jsonl");
  const uint64_t held = m.summary.at("memory_peak").at(0).at("activations").get<uint64_t>();
  CHECK(std::stoull(planned[1]) == held);
}

TEST_CASE("in the GPU memory a limit leaves, plain data parallel is refused and ZeRO-3 with offload trains",
          "[gpu][e2e][offload]") {
  const auto dir = fresh_dir("gpu-device-limit");
  // 9.7M parameters: 16Ψ = 155 MB of model states without ZeRO, in 100 MB of GPU memory (of which
  // 32 MiB are cuBLASLt's workspace).
  const std::string common = zerotrain(dir, "--set bf16.enabled=true --set model.d_model=512 --set model.n_layer=3" +
                                                std::string(" --set model.n_head=8 --set training.micro_batch_size=1") +
                                                " --set training.device_memory_limit=100000000");
  const std::string out = run_status(common + " --config zero0 --steps 3", dir + "/zero0.log", 1);
  INFO(out);
  CHECK(out.find("whose limit is 95.4 MiB (training.device_memory_limit)") != std::string::npos);
  const int code = run_command(common + " --config zero3_offload --steps " + std::to_string(steps(20)) +
                                   " --set zero_optimization.stage3_max_live_parameters=1e5" +
                                   " --set zero_optimization.stage3_prefetch_bucket_size=1e5" +
                                   " --set zero_optimization.stage3_max_reuse_distance=0",
                               dir + "/zero3.log");
  INFO(read_file(dir + "/zero3.log"));
  REQUIRE(code == 0);
  Metrics m = read_metrics(dir + "/metrics.jsonl");
  REQUIRE(m.steps.size() == size_t(steps(20)));
  CHECK(m.summary.at("memory_peak").at(0).at("params") == 0);
  CHECK(loss_drop(m) > 0.5);
}

TEST_CASE("a run on the GPU resumed from its checkpoint continues bit for bit; the CPU can resume it too",
          "[gpu][e2e][checkpoint]") {
  const auto dir = fresh_dir("gpu-checkpoint");
  auto run = [&](const std::string& name, const std::string& args) {
    const std::string cmd = zerotrain(dir, "--config zero3 --steps 6 --set bf16.enabled=true" +
                                               std::string(" --set training.checkpoint_dir=") + dir + "/" + name +
                                               " --set training.metrics=" + dir + "/" + name + ".jsonl " + args);
    const int code = run_command(cmd, dir + "/" + name + ".log");
    INFO(cmd << "\n" << read_file(dir + "/" + name + ".log"));
    REQUIRE(code == 0);
    std::vector<double> losses;
    for (const auto& step : read_metrics(dir + "/" + name + ".jsonl").steps)
      losses.push_back(step["loss"].get<double>());
    return losses;
  };
  const auto straight = run("a", "--set training.save_interval=3");
  // Started again from the checkpoint of step 3, as after a crash at step 4.
  const auto resumed = run("b", "--set training.resume=" + dir + "/a/step_00000003");
  REQUIRE(straight.size() == 6);
  REQUIRE(resumed.size() == 3);
  CHECK(std::vector<double>(straight.begin() + 3, straight.end()) == resumed);
  // The checkpoint holds fp32 master weights and Adam's moments, whatever device wrote them: the
  // CPU continues the run, within the two devices' rounding of a bf16 model.
  const auto on_cpu = run("c", "--set training.resume=" + dir + "/a/step_00000003 --set training.device=cpu");
  REQUIRE(on_cpu.size() == 3);
  for (size_t i = 0; i < 3; ++i) CHECK(std::abs(on_cpu[i] - resumed[i]) <= 0.01 * resumed[i]);
}

TEST_CASE("fp16 on the GPU is refused with one message naming the keys", "[gpu][e2e][smoke]") {
  const auto dir = fresh_dir("gpu-fp16");
  const std::string log =
      run_status(zerotrain(dir, "--config zero2 --steps 5 --set fp16.enabled=true"), dir + "/out.log", 1);
  INFO(log);
  CHECK(log.find("training.device") != std::string::npos);
  CHECK(log.find("fp16.enabled") != std::string::npos);
  CHECK(log.find("| loss ") == std::string::npos);  // nothing trained
}

TEST_CASE("the llama family trains on the GPU under training.device auto", "[gpu][e2e]") {
  for (std::string preset : {"llama-tiny", "qwen3-tiny"}) {
    const auto dir = fresh_dir("gpu-" + preset);
    const std::string cmd =
        zerotrain(dir, "--config zero2 --steps " + std::to_string(steps(30)) + " --set bf16.enabled=true", preset,
                  "auto");
    INFO(cmd);
    const std::string log = run_ok(cmd, dir + "/out.log");
    INFO(log);
    CHECK(log.find("device: " + kDevice) != std::string::npos);
    CHECK(log.find("training on the CPU although") == std::string::npos);
    Metrics m = read_metrics(dir + "/metrics.jsonl");
    REQUIRE(m.steps.size() == size_t(steps(30)));
    CHECK(m.setup["dtype"] == "bf16");
    CHECK(loss_drop(m) > 0.5);
  }
}
