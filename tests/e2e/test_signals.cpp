// Stopping a run from outside: SIGINT (Ctrl-C), SIGTERM or SIGUSR1 stops zerotrain after the
// current step, saves a checkpoint of it, skips the final eval and save_final, exits 75
// (EX_TEMPFAIL) and says so on its last line; the same command with training.resume auto continues
// at the next step. Ctrl-C or SIGTERM on scripts/launch.sh does the same for every rank of a job,
// named as what the launcher received, and without mpirun's report of ranks that exited non-zero. During set-up a stop
// signal ends the process at once, and nothing in set-up blocks forever (a FIFO as data).
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include <fstream>
#include <regex>

#include "run_helpers.hpp"

using namespace zt::test;

namespace {

constexpr int kExitInterrupted = 75;

// The step the run said it stopped after ("interrupted ...: stopping after step K"), or -1.
int64_t stopped_after(const std::string& log) {
  std::smatch m;
  if (!std::regex_search(log, m, std::regex(R"(interrupted[^\n]*: stopping after step (\d+))"))) return -1;
  return std::stoll(m[1]);
}

// The last line of the output, without its line end.
std::string last_line_of(const std::string& log) {
  std::string s = log;
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s.substr(s.rfind('\n') + 1);
}

// What every interrupted run must show: it stopped after a step it logged, the metrics end with
// that step, the summary counts it and says it was interrupted (the console's too), the
// checkpoint of that step is complete and `latest` names it, neither the final eval nor the
// final weights were made (it is not a finished run), and its last line says so: the step, the
// signal (`by`), the checkpoint and how to resume.
int64_t check_interrupted(const std::string& dir, const std::string& log, int64_t at_least, const std::string& by) {
  const int64_t k = stopped_after(log);
  REQUIRE(k >= at_least);
  Metrics m = read_metrics(dir + "/metrics.jsonl");
  REQUIRE(m.steps.size() == size_t(k));
  CHECK(m.steps.back()["step"] == k);
  REQUIRE(m.last["event"] == "summary");
  CHECK(m.summary["steps"] == k);
  CHECK(m.summary["interrupted"] == true);
  CHECK(m.summary["tokens"] == int64_t(k) * m.steps.back()["tokens"].get<int64_t>());
  CHECK(log.find("summary: interrupted (stop requested) | " + std::to_string(k) + " steps") != std::string::npos);
  CHECK(m.evals.empty());  // eval_interval 100: only a final eval could have run
  CHECK(log.find("done: " + std::to_string(k) + " steps in") != std::string::npos);
  char step_dir[32];
  std::snprintf(step_dir, sizeof step_dir, "step_%08lld", static_cast<long long>(k));
  CHECK(read_file(dir + "/ckpt/latest") == std::string(step_dir) + "\n");
  CHECK(std::filesystem::exists(dir + "/ckpt/" + step_dir + "/meta.json"));
  CHECK_THAT(last_line_of(log),
             Catch::EndsWith("stopped at step " + std::to_string(k) + " of 100000: interrupted by " + by +
                             "; checkpoint at " + dir + "/ckpt/" + step_dir +
                             "; resume with the same command (training.resume auto) (exit status 75)"));
  CHECK_FALSE(std::filesystem::exists(dir + "/final/model.safetensors"));
  return k;
}

std::string run_args(const std::string& dir, int64_t steps = 100000) {
  return " --steps " + std::to_string(steps) + " --set training.logging_steps=1 --set training.metrics=" + dir +
         "/metrics.jsonl --set training.save_final=" + dir + "/final --set training.checkpoint_dir=" + dir +
         "/ckpt --set training.resume=auto";
}

}  // namespace

TEST_CASE("a stop signal ends a single process after the current step with a checkpoint, exit code 75",
          "[e2e][signals]") {
  for (auto [sig, name] : {std::pair{SIGINT, "SIGINT"}, {SIGTERM, "SIGTERM"}, {SIGUSR1, "SIGUSR1"}}) {
    DYNAMIC_SECTION(name) {
      auto dir = fresh_dir(std::string("stop-") + name);
      const std::string log = dir + "/out.log";
      Background run(std::string(ZT_ZEROTRAIN) + " --config zero2" + run_args(dir), log);
      REQUIRE(wait_for_text(log, "step     3/", 60));
      run.signal(sig);
      int code = run.wait(30);
      std::string out = read_file(log);
      INFO(out);
      CHECK(code == kExitInterrupted);
      CHECK(out.find(std::string("interrupted by ") + name) != std::string::npos);
      CHECK(out.find("training.resume auto: no checkpoint in " + dir + "/ckpt yet; starting from scratch") !=
            std::string::npos);
      check_interrupted(dir, out, 3, name);
    }
  }
}

TEST_CASE("a second SIGINT ends the process at once", "[e2e][signals]") {
  auto dir = fresh_dir("stop-twice");
  const std::string log = dir + "/out.log";
  // Steps of about a second, so the second signal lands inside the step the first one interrupted.
  Background run(std::string(ZT_ZEROTRAIN) + " --config zero0 --set model.d_model=256 --set model.n_layer=4" +
                     " --set training.micro_batch_size=64" + run_args(dir),
                 log);
  REQUIRE(wait_for_text(log, "step     1/", 120));
  run.signal(SIGINT);
  // Once the first has been taken (no longer pending), the second.
  const std::string status = "/proc/" + std::to_string(run.pid()) + "/status";
  for (int i = 0; i < 1000; ++i) {
    std::string s = read_file(status);
    auto at = s.find("ShdPnd:");
    if (at == std::string::npos || std::stoull(s.substr(at + 7), nullptr, 16) == 0) break;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  run.signal(SIGINT);
  int code = run.wait(30);
  std::string out = read_file(log);
  INFO(out);
  CHECK(code == 128 + SIGINT);
  CHECK(out.find("done: ") == std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir + "/final/model.safetensors"));
}

TEST_CASE("Ctrl-C on launch.sh stops every rank after the same step, exit code 75", "[e2e][signals][launch]") {
  auto dir = fresh_dir("stop-launch");
  const std::string log = dir + "/out.log";
  Background job(launch(2) + " --config zero2" + run_args(dir), log);
  REQUIRE(wait_for_text(log, "step     3/", 120));
  job.signal_group(SIGINT);  // the terminal's Ctrl-C: the launcher's whole process group
  int code = job.wait(60);
  std::string out = read_file(log);
  INFO(out);
  CHECK(code == kExitInterrupted);
  CHECK(out.find("launch.sh: interrupted by SIGINT") != std::string::npos);
  CHECK(out.find("interrupted by SIGINT (Ctrl-C to the launcher): stopping after step") != std::string::npos);
  CHECK(out.find("stop requested on 2 of 2 ranks") != std::string::npos);
  check_interrupted(dir, out, 3, "SIGINT (Ctrl-C to the launcher)");
  // A stop, not a crash: none of mpirun's report of ranks that exited non-zero.
  CHECK(out.find("non-zero") == std::string::npos);
  CHECK(out.find("Primary job") == std::string::npos);
  // mpirun waited for its ranks; nothing of the job is left.
  std::vector<std::string> left;
  for (int i = 0; i < 50; ++i) {
    left = processes_mentioning(dir);
    if (left.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  INFO("still running: " << (left.empty() ? "" : left.front()));
  CHECK(left.empty());
}

namespace {

// A token file whose validation at set-up takes seconds (a sparse file of zeros: no disk space).
std::string slow_to_open_data(const std::string& dir) {
  const std::string path = dir + "/zeros.u16";
  { std::ofstream(path, std::ios::binary); }
  std::filesystem::resize_file(path, uint64_t(16) << 30);
  return path;
}

}  // namespace

TEST_CASE("a stop signal during set-up ends the process at once, status 128 + signal", "[e2e][signals][setup]") {
  auto dir = fresh_dir("stop-in-setup");
  const std::string log = dir + "/out.log";
  Background run(std::string(ZT_ZEROTRAIN) + " --config zero2 --steps 100000 --data " + slow_to_open_data(dir) +
                     " --set training.metrics=" + dir + "/metrics.jsonl",
                 log);
  REQUIRE(wait_for_text(log, "device: ", 60));  // set-up has begun: the data file is being read next
  run.signal(SIGTERM);
  const auto t0 = std::chrono::steady_clock::now();
  int code = run.wait(30);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string out = read_file(log);
  INFO(out);
  CHECK(code == 128 + SIGTERM);
  CHECK(seconds < 10);
  CHECK(out.find("[rank 0] error: interrupted by SIGTERM during set-up: exiting before the first step (exit status "
                 "143)") != std::string::npos);
  CHECK(out.find("step     1/") == std::string::npos);
  std::filesystem::remove(dir + "/zeros.u16");
}

TEST_CASE("Ctrl-C on launch.sh during set-up ends every rank at once, non-zero", "[e2e][signals][setup][launch]") {
  auto dir = fresh_dir("stop-launch-in-setup");
  const std::string log = dir + "/out.log";
  Background job(launch(2) + " --config zero2 --steps 100000 --data " + slow_to_open_data(dir), log);
  REQUIRE(wait_for_text(log, "device: ", 120));
  job.signal_group(SIGINT);
  int code = job.wait(30);
  std::string out = read_file(log);
  INFO(out);
  CHECK(code == 128 + SIGINT);  // ended, without waiting for the set-up to finish: as Ctrl-C ends a process
  CHECK(out.find("interrupted by SIGINT (Ctrl-C to the launcher) during set-up: exiting before the first step "
                 "(exit status 130)") != std::string::npos);
  CHECK(out.find("step     1/") == std::string::npos);
  std::filesystem::remove(dir + "/zeros.u16");
}

TEST_CASE("a FIFO as data is refused at once instead of blocking set-up", "[e2e][signals][setup]") {
  auto dir = fresh_dir("fifo-data");
  const std::string fifo = dir + "/fifo.txt";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  for (const std::string key : {"data.train", "data.val"}) {
    DYNAMIC_SECTION(key) {
      Background run(std::string(ZT_ZEROTRAIN) + " --config zero2 --steps 3 --set " + key + "=" + fifo,
                     dir + "/out.log");
      int code = run.wait(30);
      std::string out = read_file(dir + "/out.log");
      INFO(out);
      CHECK(code != 0);
      CHECK(code != -1);  // no writer ever comes: opening it must not wait for one
      CHECK(out.find(fifo + ": cannot open data file: is a FIFO, not a regular file") != std::string::npos);
    }
  }
}

TEST_CASE("SIGTERM to launch.sh saves; the same command with resume auto continues at the next step",
          "[e2e][signals][launch][resume]") {
  auto dir = fresh_dir("preempt-launch");
  const std::string log = dir + "/out.log";
  Background job(launch(2) + " --config zero1" + run_args(dir), log);
  REQUIRE(wait_for_text(log, "step     3/", 120));
  job.signal(SIGTERM);  // what a scheduler sends the job's launcher
  int code = job.wait(60);
  std::string out = read_file(log);
  INFO(out);
  CHECK(code == kExitInterrupted);
  const int64_t k = check_interrupted(dir, out, 3, "SIGTERM (to the launcher)");

  // The requeued job: the same command (here told to stop two steps later).
  code = run_command(launch(2) + " --config zero1" + run_args(dir, k + 2), dir + "/again.log");
  out = read_file(dir + "/again.log");
  INFO(out);
  CHECK(code == 0);
  CHECK(out.find("resuming from " + dir + "/ckpt/") != std::string::npos);
  CHECK(out.find("training continues at step " + std::to_string(k + 1)) != std::string::npos);
  // The metrics file goes on: the interrupted run's steps, a new setup line, then k+1 and k+2.
  std::ifstream in(dir + "/metrics.jsonl");
  std::vector<std::vector<nlohmann::json>> runs;  // the records of each run, from its setup line on
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    if (j["event"] == "setup") runs.emplace_back();
    REQUIRE_FALSE(runs.empty());
    runs.back().push_back(j);
  }
  REQUIRE(runs.size() == 2);
  std::vector<int64_t> steps[2];
  bool evaluated = false;
  for (size_t r = 0; r < 2; ++r)
    for (auto& j : runs[r]) {
      if (j["event"] == "step") steps[r].push_back(j["step"]);
      if (r == 1 && j["event"] == "eval") evaluated = j["step"] == k + 2;
    }
  CHECK(steps[0].size() == size_t(k));
  CHECK(steps[1] == std::vector<int64_t>{k + 1, k + 2});
  CHECK(evaluated);  // a finished run evaluates after its last step, and writes its final weights
  CHECK(std::filesystem::exists(dir + "/final/model.safetensors"));
}
