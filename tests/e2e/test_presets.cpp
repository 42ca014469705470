// Every preset in configs/ trains the toy model on the shipped corpus with 4 ranks.
#include <catch2/catch.hpp>

#include <map>

#include "run_helpers.hpp"

using namespace zt::test;

TEST_CASE("every preset trains the toy model with 4 ranks and the loss falls", "[e2e][presets]") {
  std::map<std::string, Metrics> runs;
  for (std::string preset : {"zero0", "zero1", "zero2", "zero2_offload", "zero3", "zero3_offload"}) {
    auto dir = fresh_dir("preset-" + preset);
    const bool breakdown = preset == "zero2" || preset == "zero3";
    const bool eval = preset == "zero3";  // every rank evaluates, gathering parameters as in training
    std::string cmd =
        launch(4) + " --config " + preset + " --steps 60 --set training.lr=3e-3 --set training.metrics=" + dir +
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
    runs[preset] = m;
  }
  // An offload preset differs from its twin only in where the state lives: the same numbers, bit
  // for bit, with the twin's optimizer (and, at stage 3, parameter) bytes moved to "offload".
  for (std::string twin : {"zero2", "zero3"}) {
    INFO(twin);
    const Metrics &a = runs[twin], &b = runs[twin + "_offload"];
    REQUIRE(a.steps.size() == b.steps.size());
    for (size_t i = 0; i < a.steps.size(); ++i) {
      CHECK(a.steps[i]["loss"] == b.steps[i]["loss"]);
      CHECK(a.steps[i]["lr"] == b.steps[i]["lr"]);
    }
    for (size_t r = 0; r < 4; ++r) {
      const auto &plain = a.setup["memory"][r], &off = b.setup["memory"][r];
      uint64_t moved = plain["optimizer"].get<uint64_t>() + (twin == "zero3" ? plain["params"].get<uint64_t>() : 0);
      CHECK(off["offload"].get<uint64_t>() == moved);
      CHECK(off["grads"] == plain["grads"]);
    }
  }
}
