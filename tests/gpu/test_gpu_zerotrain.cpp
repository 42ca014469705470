// The zerotrain binary with training.device cuda, one rank without a launcher: it trains, says
// where, writes the metrics (MFU against the GPU's peak), and refuses what the GPU cannot do.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "run_helpers.hpp"

using namespace zt::test;

namespace {

std::string zerotrain(const std::string& dir, const std::string& args) {
  return std::string(ZT_ZEROTRAIN) + " --model toy --set training.device=cuda --set data.seq_len=64" +
         " --set training.lr=3e-3 --set training.eval_interval=0 --set training.metrics=" + dir + "/metrics.jsonl " +
         args;
}

double mean_loss(const Metrics& m, size_t from, size_t count) {
  double sum = 0;
  for (size_t i = from; i < from + count; ++i) sum += m.steps[i]["loss"].get<double>();
  return sum / double(count);
}

}  // namespace

TEST_CASE("zerotrain trains on the GPU in bf16 and fp32 and reports MFU against the GPU's peak", "[gpu][e2e]") {
  for (std::string dtype : {"bf16", "fp32"}) {
    const auto dir = fresh_dir("gpu-zero2-" + dtype);
    const std::string bf16 = dtype == "bf16" ? "true" : "false";
    const std::string cmd = zerotrain(dir, "--config zero2 --steps 60 --set bf16.enabled=" + bf16);
    INFO(cmd);
    const int code = run_command(cmd, dir + "/out.log");
    const std::string log = read_file(dir + "/out.log");
    INFO(log);
    REQUIRE(code == 0);
    CHECK(log.find("device: NVIDIA") != std::string::npos);
    CHECK(log.find("CUDA device 0 of") != std::string::npos);
    Metrics m = read_metrics(dir + "/metrics.jsonl");
    REQUIRE(m.steps.size() == 60);
    CHECK(m.setup["dtype"] == dtype);
    CHECK(mean_loss(m, 55, 5) < mean_loss(m, 0, 5) - 1.0);
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
  const std::string cmd = zerotrain(dir, "--config zero3_offload --steps 40 --set bf16.enabled=true");
  INFO(cmd);
  const int code = run_command(cmd, dir + "/out.log");
  INFO(read_file(dir + "/out.log"));
  REQUIRE(code == 0);
  Metrics m = read_metrics(dir + "/metrics.jsonl");
  REQUIRE(m.steps.size() == 40);
  CHECK(m.setup["memory"][0]["offload"].get<uint64_t>() > 0);
  CHECK(mean_loss(m, 35, 5) < mean_loss(m, 0, 5) - 0.5);
}

TEST_CASE("fp16 on the GPU is refused with one message naming the keys", "[gpu][e2e]") {
  const auto dir = fresh_dir("gpu-fp16");
  const int code = run_command(zerotrain(dir, "--config zero2 --steps 5 --set fp16.enabled=true"), dir + "/out.log");
  const std::string log = read_file(dir + "/out.log");
  INFO(log);
  CHECK(code == 1);
  CHECK(log.find("training.device") != std::string::npos);
  CHECK(log.find("fp16.enabled") != std::string::npos);
  CHECK(log.find("| loss ") == std::string::npos);  // nothing trained
}
