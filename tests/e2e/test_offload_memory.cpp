// Offload measured by the operating system: with the optimizer state in an NVMe file, a rank's
// peak resident memory drops by most of the optimizer state; with the parameter shard there too,
// by most of the parameters as well; the ledger accounts for the difference; the numbers do not
// change by a bit.
#include <catch2/catch.hpp>

#include <filesystem>

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
    int code = run_command("sh -c \"" + limited + "\"", dir + "/out.log");
    std::string out = read_file(dir + "/out.log");
    INFO(out);
    CHECK(code == 1);
    CHECK(out.find("zero_optimization." + block + ".nvme_path: cannot reserve") != std::string::npos);
    CHECK(out.find("\"" + nvme + "\": File too large") != std::string::npos);
    CHECK(out.find("step     1/") == std::string::npos);  // stopped before training
    CHECK(std::filesystem::is_empty(nvme));                 // and left nothing behind
  }
}
