// Every preset in configs/ trains the toy model on the shipped corpus with 4 ranks.
#include <catch2/catch.hpp>

#include "run_helpers.hpp"

using namespace zt::test;

TEST_CASE("every preset trains the toy model with 4 ranks and the loss falls", "[e2e][presets]") {
  for (std::string preset : {"zero0", "zero1", "zero2", "zero2_offload", "zero3", "zero3_offload"}) {
    auto dir = fresh_dir("preset-" + preset);
    const bool breakdown = preset == "zero2" || preset == "zero3";
    const bool eval = preset == "zero3";  // every rank evaluates, gathering parameters as in training
    std::string cmd = launch(4) + " --config " + preset + " --steps 60 --set training.lr=3e-3 --set training.metrics=" + dir +
                      "/metrics.jsonl --set training.log_dir=" + dir + "/logs --set data.seq_len=64" +
                      (breakdown ? " --set wall_clock_breakdown=true" : "") +
                      (eval ? " --set training.eval_interval=30 --set training.eval_batches=4" : " --set training.eval_interval=0");
    INFO(preset << ": " << cmd);
    int code = run_command(cmd, dir + "/out.log");
    INFO(read_file(dir + "/out.log"));
    REQUIRE(code == 0);
    Metrics m = read_metrics(dir + "/metrics.jsonl");
    REQUIRE(m.steps.size() == 60);
    CHECK(m.setup["world_size"] == 4);
    CHECK(m.setup["memory"].size() == 4);
    double first = 0, last = 0;
    for (int i = 0; i < 5; ++i) {
      first += m.steps[size_t(i)]["loss"].get<double>() / 5;
      last += m.steps[m.steps.size() - 1 - size_t(i)]["loss"].get<double>() / 5;
    }
    CHECK(last < first - 1.0);
    REQUIRE(m.evals.size() == (eval ? 2u : 0u));
    for (auto& e : m.evals) CHECK(e["val_loss"].get<double>() < first - 1.0);
    // wall_clock_breakdown adds where each step's time went; the parts fit inside the step.
    for (auto& step : m.steps) {
      REQUIRE(step.contains("time_ms") == breakdown);
      if (!breakdown) continue;
      auto& t = step["time_ms"];
      double parts = t["forward"].get<double>() + t["backward"].get<double>() + t["step"].get<double>();
      CHECK(parts > 0);
      CHECK(parts <= step["step_ms"].get<double>() * 1.001);
      CHECK(t["reduce_wait"].get<double>() + t["gather_wait"].get<double>() <= parts * 1.001);
      CHECK(t["comm_busy"].get<double>() > 0);
    }
    // Offloaded optimizer state is accounted as host memory, not device optimizer memory.
    if (preset.find("offload") != std::string::npos) {
      CHECK(m.setup["memory"][0]["offload"].get<uint64_t>() > 0);
      CHECK(m.setup["memory"][0]["optimizer"].get<uint64_t>() == 0);
    }
  }
}
