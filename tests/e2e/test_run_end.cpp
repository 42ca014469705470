// What a person at the terminal gets from a run: the summary at the end (metrics record and
// console table), the progress line (in place on a terminal, never a carriage return in a file),
// the curves drawn by `zerotrain plot`, a quiet start with the resolved config kept beside the
// metrics, and warnings for settings that would silently do nothing.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <regex>

#include "../plot/xml_check.hpp"
#include "run_helpers.hpp"

using namespace zt::test;

namespace {

constexpr const char* kCategories[] = {"params",  "grads",   "optimizer", "offload", "files",
                                      "activations", "buffers", "cached",    "resident"};

// The output of `command` run with a terminal (util-linux script gives it a pty), or "" without script.
std::string on_a_terminal(const std::string& command, const std::string& log) {
  if (run_command("command -v script", log) != 0) return "";
  REQUIRE(run_command("script -qec '" + command + "' /dev/null", log) == 0);
  return read_file(log);
}

size_t count(const std::string& s, const std::string& part) {
  size_t n = 0;
  for (auto at = s.find(part); at != std::string::npos; at = s.find(part, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("the metrics file ends with the summary; the console shows it as a table", "[e2e][summary][mpi]") {
  auto dir = fresh_dir("summary");
  int code = run_command(launch(2) + " --config zero2 --steps 20 --set training.eval_interval=10" +
                             " --set training.eval_batches=2 --set training.metrics=" + dir + "/metrics.jsonl",
                         dir + "/out.log");
  const std::string out = read_file(dir + "/out.log");
  INFO(out);
  REQUIRE(code == 0);
  Metrics m = read_metrics(dir + "/metrics.jsonl");
  REQUIRE(m.steps.size() == 20);
  REQUIRE(m.last["event"] == "summary");
  const auto& s = m.summary;

  // Steps, tokens and losses are those of the step and eval records.
  int64_t tokens = 0;
  for (const auto& step : m.steps) tokens += step["tokens"].get<int64_t>();
  CHECK(s["steps"] == 20);
  CHECK(s["interrupted"] == false);
  CHECK(s["tokens"] == tokens);
  CHECK(s["loss"] == m.steps.back()["loss"]);
  REQUIRE(m.evals.size() == 2);
  CHECK(s["val_loss"] == m.evals.back()["val_loss"]);
  const double wall = s["wall_s"].get<double>();
  CHECK(wall > 0);
  CHECK(s["tokens_per_s"].get<double>() == Approx(double(tokens) / wall).epsilon(1e-7));
  CHECK(s["mfu"].get<double>() > 0);

  // Communication: rank 0's bytes per collective are the sum of the step records'.
  for (const std::string op : {"all_reduce", "reduce_scatter", "all_gather"}) {
    INFO(op);
    uint64_t bytes = 0;
    for (const auto& step : m.steps) bytes += step["comm"][op].get<uint64_t>();
    REQUIRE(s["comm"].contains(op));
    CHECK(s["comm"][op]["bytes"] == bytes);
    CHECK(s["comm"][op]["calls"].get<uint64_t>() >= 20);
    CHECK(s["comm"][op]["seconds"].get<double>() >= 0);
  }

  // Memory: a row per rank; the model states peak at what the engine set up (they are allocated
  // once), the transient buffers at least there.
  REQUIRE(s["memory_peak"].size() == 2);
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r);
    const auto& peak = s["memory_peak"][size_t(r)];
    const auto& setup = m.setup["memory"][size_t(r)];
    CHECK(peak["rank"] == r);
    for (const char* c : {"params", "grads", "optimizer", "offload"}) CHECK(peak[c] == setup[c]);
    CHECK(peak["buffers"].get<uint64_t>() >= setup["buffers"].get<uint64_t>());
    CHECK(peak["activations"].get<uint64_t>() > 0);
    // What the operating system saw holds at least what the ledger counts.
    CHECK(peak["resident"].get<uint64_t>() > peak["params"].get<uint64_t>() + peak["activations"].get<uint64_t>());
  }

  // The console: rank 0's table only, with the record's numbers.
  CHECK(count(out, "info: summary: complete | 20 steps | " + std::to_string(tokens) + " tokens | ") == 1);
  CHECK(count(out, "plan, ZeRO-2: 2Ψ + 14Ψ/N") == 1);
  for (int r = 0; r < 2; ++r) {
    const auto& peak = s["memory_peak"][size_t(r)];
    std::string row = fmt::format("    {:<26}", fmt::format("rank {}", r));
    for (const char* c : kCategories) row += fmt::format(" {:>11.2f}", peak[c].get<double>() / 1048576.0);
    CHECK(count(out, row + "\n") == 1);
  }
  std::smatch rs;
  REQUIRE(std::regex_search(out, rs, std::regex(R"(info:     reduce_scatter +(\d+) )")));
  CHECK(std::stoull(rs[1]) == s["comm"]["reduce_scatter"]["calls"].get<uint64_t>());
  CHECK(std::regex_search(
      out, std::regex(R"(in flight \d+\.\d ms, compute waited \d+\.\d ms on them: \d+% overlapped)")));
}

TEST_CASE("the progress line: in place on a terminal, never a carriage return in a file", "[e2e][progress]") {
  auto dir = fresh_dir("progress");
  // Only step 1 and the last are logged.
  const std::string run = std::string(ZT_ZEROTRAIN) + " --config zero2 --steps 40 --logging_steps 0";

  SECTION("a file") {
    REQUIRE(run_command(run, dir + "/file.log") == 0);
    const std::string out = read_file(dir + "/file.log");
    INFO(out);
    CHECK(out.find('\r') == std::string::npos);
    CHECK(out.find("zt-progress") == std::string::npos);
    CHECK(out.find("step    40/40 | loss") != std::string::npos);
  }
  SECTION("a terminal") {
    const std::string out = on_a_terminal(run, dir + "/tty.log");
    if (out.empty()) WARN("util-linux script not found: the terminal case is not tested");
    else {
      INFO(out);
      // Drawn at the first and the last step at least, in place.
      CHECK(count(out, "\rstep 1/40   2% | loss ") >= 1);
      CHECK(count(out, "\rstep 40/40 100% | loss ") >= 1);
      const std::regex last_step("\rstep 40/40 100% \\| loss \\d\\.\\d{4} \\| [0-9.]+k? tok/s \\| ETA 0:00\x1b\\[K");
      CHECK(std::regex_search(out, last_step));
      // Every log line starts on a clean line: after a newline, or after the progress line was cleared.
      const std::regex log_line(R"(\[\d\d:\d\d:\d\d\.\d{3}\]\[rank 0\])");
      size_t lines = 0;
      for (auto it = std::sregex_iterator(out.begin(), out.end(), log_line); it != std::sregex_iterator(); ++it) {
        const size_t at = size_t(it->position());
        ++lines;
        INFO("log line at byte " << at << ": " << out.substr(at > 20 ? at - 20 : 0, 60));
        CHECK((at == 0 || out[at - 1] == '\n' || (at >= 4 && out.compare(at - 4, 4, "\r\x1b[K") == 0)));
      }
      CHECK(lines > 5);
      CHECK(out.find("zt-progress") == std::string::npos);
    }
  }
  SECTION("a terminal, through launch.sh") {
    const std::string out = on_a_terminal(launch(2) + " --config zero2 --steps 40 --logging_steps 0",
                                          dir + "/launch.log");
    if (!out.empty()) {
      INFO(out);
      CHECK(out.find("\rstep 1/40 ") != std::string::npos);
      CHECK(out.find("\rstep 40/40 100% | loss ") != std::string::npos);
      CHECK(out.find("zt-progress") == std::string::npos);  // the launcher drew every marker line
      CHECK(out.find("info: summary: complete | 40 steps") != std::string::npos);
    }
  }
  SECTION("ZT_PROGRESS=off on a terminal") {
    const std::string out = on_a_terminal("env ZT_PROGRESS=off " + run, dir + "/off.log");
    if (!out.empty()) {
      INFO(out);
      CHECK(out.find("\rstep") == std::string::npos);
    }
  }
}

TEST_CASE("training.logging_steps decides the step lines, whatever steps_per_print says", "[e2e][progress]") {
  auto dir = fresh_dir("logging-steps");
  // steps_per_print 2000, as the Trainer's DeepSpeed configs have it.
  REQUIRE(run_command(std::string(ZT_ZEROTRAIN) + " --config zero2 --steps 20 --set steps_per_print=2000" +
                          " --logging_steps 5 --set training.eval_interval=0",
                      dir + "/file.log") == 0);
  const std::string out = read_file(dir + "/file.log");
  INFO(out);
  for (int step : {1, 5, 10, 15, 20}) CHECK(count(out, fmt::format("step {:>5}/20 | loss", step)) == 1);
  CHECK(count(out, "/20 | loss") == 5);
  CHECK(out.find("info: a step line every 5 steps from training.logging_steps (--logging_steps 5); steps_per_print "
                 "2000 (--set steps_per_print=2000) is DeepSpeed's own print interval and decides nothing here") !=
        std::string::npos);
}

TEST_CASE("zerotrain plot draws the runs' curves: one path per series, one point per record", "[e2e][plot]") {
  auto dir = fresh_dir("plot");
  for (const std::string stage : {"zero1", "zero3"})
    REQUIRE(run_command(std::string(ZT_ZEROTRAIN) + " --config " + stage + " --steps 30" +
                            " --set training.eval_interval=10 --set training.eval_batches=1" +
                            " --set training.metrics=" + dir + "/" + stage + ".jsonl",
                        dir + "/" + stage + ".log") == 0);
  REQUIRE(run_command(std::string(ZT_ZEROTRAIN) + " plot " + dir + "/zero1.jsonl " + dir + "/zero3.jsonl -o " + dir +
                          "/curves.svg",
                      dir + "/plot.log") == 0);
  INFO(read_file(dir + "/plot.log"));
  const XmlElement svg = parse_xml(read_file(dir + "/curves.svg"));
  CHECK(svg.name == "svg");
  std::map<std::string, size_t> points;
  for (const auto* p : svg.find_all("path")) {
    const std::string d = p->attributes.at("d");
    points[p->children.at(0).text] = size_t(std::count(d.begin(), d.end(), 'M') + std::count(d.begin(), d.end(), 'L'));
  }
  std::map<std::string, size_t> expected;
  for (const std::string run : {"zero1", "zero3"}) {
    Metrics m = read_metrics(dir + "/" + run + ".jsonl");
    for (const char* series : {": train loss", ": learning rate", ": gradient norm", ": tokens/s"})
      expected[run + series] = m.steps.size();
    expected[run + ": val loss"] = m.evals.size();
  }
  CHECK(points == expected);
  CHECK(expected["zero1: val loss"] == 3);
}

TEST_CASE("a quiet start: the resolved config only at debug level, and beside the metrics file", "[e2e][start]") {
  auto dir = fresh_dir("start");
  const std::string args = " --config zero2 --steps 2 --set training.metrics=" + dir + "/metrics.jsonl";
  REQUIRE(run_command(std::string(ZT_ZEROTRAIN) + args, dir + "/info.log") == 0);
  const std::string info = read_file(dir + "/info.log");
  INFO(info);
  CHECK(info.find("\"zero_optimization\"") == std::string::npos);
  CHECK(count(info, "\n") < 30);  // one screen, summary included
  for (const char* line :
       {"model: GPT-2 2 layers", "ZeRO stage 2 on 1 rank, bf16", "batch 4 = micro 4 x accumulation 1",
        "data: ", "optimizer: AdamW lr 5e-05, betas 0.9/0.999, weight decay 0,", "memory rank 0: params"})
    CHECK(info.find(line) != std::string::npos);
  CHECK(info.find("1 ranks") == std::string::npos);

  // The file beside the metrics holds what --print-config prints for the same command line.
  REQUIRE(run_command("sh -c \"" + std::string(ZT_ZEROTRAIN) + args + " --print-config >" + dir + "/printed.json\"",
                      dir + "/p.log") == 0);
  auto written = nlohmann::json::parse(read_file(dir + "/metrics.jsonl.config.json"));
  CHECK(written == nlohmann::json::parse(read_file(dir + "/printed.json")));

  // The same run again, afresh over the first one's metrics.
  REQUIRE(run_command(std::string(ZT_ZEROTRAIN) + args + " --overwrite --log-level debug", dir + "/debug.log") == 0);
  CHECK(read_file(dir + "/debug.log").find("\"zero_optimization\"") != std::string::npos);
}

TEST_CASE("text read as bytes under a larger vocabulary is warned about", "[e2e][warnings]") {
  auto dir = fresh_dir("vocab-warning");
  REQUIRE(run_command(std::string(ZT_ZEROTRAIN) + " --config zero0 --steps 1 --set model.vocab_size=50257",
                      dir + "/big.log") == 0);
  const std::string big = read_file(dir + "/big.log");
  INFO(big);
  CHECK(count(big, "text is read as bytes, so its token ids cover 256 of the model's 50257 (model.vocab_size)") == 1);
  REQUIRE(run_command(std::string(ZT_ZEROTRAIN) + " --config zero0 --steps 1", dir + "/toy.log") == 0);
  CHECK(read_file(dir + "/toy.log").find("token ids cover") == std::string::npos);
}
