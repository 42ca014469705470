// Offload measured by the operating system: with the optimizer state in an NVMe file, a rank's
// peak resident memory drops by most of the optimizer state; with the parameter shard there too,
// by most of the parameters as well; the ledger accounts for the difference; the numbers do not
// change by a bit.
#include <catch2/catch.hpp>

#include <filesystem>
#include <regex>

#include "run_helpers.hpp"

using namespace zt::test;

namespace {

struct Run {
  Metrics metrics;
  nlohmann::json peak;  // the summary's memory row of rank 0
  // What the ledger says lives in memory: every category, offloaded state in files excluded.
  double ledger_resident() const {
    double bytes = 0;
    for (const char* k : {"params", "grads", "optimizer", "offload", "activations", "buffers", "cached"})
      bytes += peak[k].get<double>();
    return bytes - peak["files"].get<double>();
  }
  double resident() const { return peak["resident"].get<double>(); }
};

Run train(const std::string& dir, const std::string& name, const std::string& optimizer, const std::string& params) {
  const std::string nvme = dir + "/nvme";
  std::filesystem::create_directories(nvme);
  const std::string metrics = dir + "/" + name + ".jsonl";
  // gpt2-tiny (16M parameters): the optimizer state (12 bytes a parameter) dwarfs what else a
  // rank holds at one sequence of 64 tokens. One rank, no launcher: the process is the rank.
  int code = run_command(std::string(ZT_ZEROTRAIN) + " --config zero3 --model gpt2-tiny --steps 2" +
                             " --set data.seq_len=64 --set training.micro_batch_size=1 --set training.eval_interval=0" +
                             " --set zero_optimization.sub_group_size=1e6" +
                             " --set zero_optimization.offload_optimizer.device=" + optimizer +
                             " --set zero_optimization.offload_optimizer.nvme_path=" + nvme +
                             " --set zero_optimization.offload_param.device=" + params +
                             " --set zero_optimization.offload_param.nvme_path=" + nvme +
                             " --set training.metrics=" + metrics,
                         dir + "/" + name + ".log");
  INFO(read_file(dir + "/" + name + ".log"));
  REQUIRE(code == 0);
  Run r;
  r.metrics = read_metrics(metrics);
  REQUIRE(r.metrics.steps.size() == 2);
  r.peak = r.metrics.summary.at("memory_peak").at(0);
  return r;
}

}  // namespace

TEST_CASE("nvme offload lowers the resident peak by most of the optimizer state and the parameters",
          "[e2e][offload]") {
  auto dir = fresh_dir("offload-memory");
  const Run plain = train(dir, "plain", "none", "none");
  const Run optimizer = train(dir, "optimizer", "nvme", "none");
  const Run both = train(dir, "both", "nvme", "nvme");
  const double psi = plain.metrics.setup["num_params"].get<double>();
  const double mib = 1048576.0;
  INFO("resident MiB: plain " << plain.resident() / mib << ", optimizer on nvme " << optimizer.resident() / mib
                              << ", and parameters " << both.resident() / mib << "; Ψ = " << psi);

  // Bit for bit the same training.
  for (size_t s = 0; s < 2; ++s) {
    CHECK(optimizer.metrics.steps[s]["loss"] == plain.metrics.steps[s]["loss"]);
    CHECK(both.metrics.steps[s]["loss"] == plain.metrics.steps[s]["loss"]);
  }
  // The state went to the files.
  CHECK(optimizer.peak["files"].get<double>() >= 12 * psi);
  CHECK(both.peak["files"].get<double>() >= 14 * psi);
  CHECK(optimizer.peak["optimizer"] == 0);
  CHECK(both.peak["params"] == 0);

  // The operating system's view: most of 12Ψ (host memory keeps buffer_count = 4 sub-groups of
  // 1e6 elements, 48 MB, and the staging of one), then most of 2Ψ more.
  const double optimizer_drop = plain.resident() - optimizer.resident();
  const double params_drop = optimizer.resident() - both.resident();
  CHECK(optimizer_drop > 0.6 * 12 * psi);
  CHECK(params_drop > 0.6 * 2 * psi);
  // And the ledger explains it: its own drops agree with the OS's within a few MiB.
  CHECK(std::abs(optimizer_drop - (plain.ledger_resident() - optimizer.ledger_resident())) < 8 * mib);
  CHECK(std::abs(params_drop - (optimizer.ledger_resident() - both.ledger_resident())) < 8 * mib);
  // Nothing is left in nvme_path.
  CHECK(std::filesystem::is_empty(dir + "/nvme"));
}

TEST_CASE("an nvme_path without room for the offloaded state stops the run at start-up, naming key and path",
          "[e2e][offload]") {
  auto dir = fresh_dir("offload-no-room");
  const std::string nvme = dir + "/nvme";
  std::filesystem::create_directories(nvme);
  for (const std::string block : {"offload_optimizer", "offload_param"}) {
    INFO(block);
    // A file size limit of 100 blocks (50 KiB): the toy model's offloaded state does not fit.
    const std::string limited = "trap '' XFSZ; ulimit -f 100 && " + std::string(ZT_ZEROTRAIN) +
                                " --config zero3 --steps 100000 --set zero_optimization." + block +
                                ".device=nvme --set zero_optimization." + block + ".nvme_path=" + nvme;
    const std::string out = run_status("sh -c \"" + limited + "\"", dir + "/out.log", 1);
    INFO(out);
    CHECK(out.find("zero_optimization." + block + ".nvme_path: cannot reserve") != std::string::npos);
    CHECK(out.find("\"" + nvme + "\": File too large") != std::string::npos);
    CHECK(out.find("step     1/") == std::string::npos);  // stopped before training
    CHECK(std::filesystem::is_empty(nvme));                 // and left nothing behind
  }
}

TEST_CASE("a model plain data parallel cannot hold in the device memory it is given trains under ZeRO-3 with offload",
          "[e2e][offload]") {
  auto dir = fresh_dir("offload-device-limit");
  // 6.4M parameters (16Ψ = 103 MB of model states without ZeRO), 40 MB of device memory.
  const double limit = 40e6;
  const std::string common = std::string(ZT_ZEROTRAIN) + " --set model.d_model=256 --set model.n_layer=8" +
                             " --set model.n_head=4 --set data.seq_len=64 --set training.micro_batch_size=1" +
                             " --set training.eval_interval=0 --set training.device_memory_limit=40000000";
  const std::string stage3 = " --set zero_optimization.stage3_max_live_parameters=100000" +
                             std::string(" --set zero_optimization.stage3_prefetch_bucket_size=100000") +
                             " --set zero_optimization.stage3_max_reuse_distance=0";

  SECTION("plain data parallel is refused at set-up, naming the limit; its dry run said so") {
    std::string out = run_status(common + " --config zero0 --dry-run", dir + "/plan.log", 0);
    INFO(out);
    CHECK(out.find("of device memory per rank, more than its limit of 38.1 MiB (training.device_memory_limit)") !=
          std::string::npos);
    out = run_status(common + " --config zero0 --steps 3", dir + "/zero0.log", 1);
    INFO(out);
    CHECK(out.find("out of memory: cannot allocate") != std::string::npos);
    CHECK(out.find("whose limit is 38.1 MiB (training.device_memory_limit)") != std::string::npos);
    CHECK(out.find("step     1/") == std::string::npos);
  }

  SECTION("ZeRO-3 with the parameters and the optimizer state offloaded trains it within the limit") {
    const std::string metrics = dir + "/zero3_offload.jsonl";
    int code = run_command(common + stage3 + " --config zero3_offload --steps 20 --set training.metrics=" + metrics,
                           dir + "/zero3_offload.log");
    INFO(read_file(dir + "/zero3_offload.log"));
    REQUIRE(code == 0);
    Metrics m = read_metrics(metrics);
    REQUIRE(m.steps.size() == 20);
    CHECK(16 * m.setup["num_params"].get<double>() > 2 * limit);  // plain data parallel's model states alone
    const auto& peak = m.summary.at("memory_peak").at(0);
    CHECK(peak["params"] == 0);
    CHECK(peak["optimizer"] == 0);
    CHECK(peak["offload"].get<double>() >= 14 * m.setup["num_params"].get<double>());
    double first = 0, last = 0;
    for (size_t s = 0; s < 5; ++s) {
      first += m.steps[s]["loss"].get<double>() / 5;
      last += m.steps[15 + s]["loss"].get<double>() / 5;
    }
    CHECK(last < first - 0.5);

    // The plan's bound on transient buffers covers the offload staging in host memory too.
    REQUIRE(run_command(common + stage3 + " --config zero3_offload --dry-run", dir + "/plan.log") == 0);
    const std::string plan = read_file(dir + "/plan.log");
    INFO(plan);
    std::smatch bound;
    REQUIRE(std::regex_search(
        plan, bound, std::regex(R"(buffers +<= +(\d+\.\d\d) MiB .* (\d+\.\d\d) MiB of offload staging)")));
    CHECK(std::stod(bound[2]) > 0);
    CHECK(peak["buffers"].get<double>() <= std::stod(bound[1]) * 1048576.0);
  }
}
