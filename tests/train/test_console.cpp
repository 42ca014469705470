// What a person sees start and go: the progress line's text and times, the step lines of a log
// with no progress line, and the refusal of ranks that a PyTorch-style launcher started without MPI.
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "comm/foreign_launcher.hpp"
#include "metrics/progress.hpp"
#include "metrics/step_log.hpp"

using namespace zt;

namespace {

EnvLookup env_of(const std::map<std::string, std::string>& vars) {
  return [vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

}  // namespace

TEST_CASE("the progress line: step of total, percent, loss, throughput, time left") {
  CHECK(ProgressLine::text(120, 250, 2.81234, 65432, 3.4) ==
        "step 120/250  48% | loss 2.8123 | 65.4k tok/s | ETA 0:03");
  CHECK(ProgressLine::text(1, 100000, 5.5, 1234567, NAN) == "step 1/100000   0% | loss 5.5000 | 1.23M tok/s | ETA --");
  CHECK(ProgressLine::text(250, 250, 2.7, 812, 0) == "step 250/250 100% | loss 2.7000 | 812 tok/s | ETA 0:00");
  CHECK(format_duration(59.4) == "0:59");
  CHECK(format_duration(61) == "1:01");
  CHECK(format_duration(3725) == "1:02:05");
  CHECK(format_duration(-1) == "--");
  // No control characters: the terminal code adds the carriage returns, and only on a terminal.
  for (char c : ProgressLine::text(7, 9, 1.0, 1e9, 1e6)) CHECK(static_cast<unsigned char>(c) >= 0x20);
}

TEST_CASE("an Off progress line writes nothing") {
  ProgressLine off;
  off.update(1, 5.0, 512, 1000);  // would crash or print if it did anything
  off.finish();
  ProgressLine also_off(ProgressMode::Off, 10);
  also_off.update(10, 5.0, 512, 1000);
  SUCCEED();
}

TEST_CASE("ranks of torchrun or the deepspeed launcher are told to use MPI; MPI ranks and single processes pass") {
  auto torchrun = foreign_launcher_problem(env_of({{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "3"}}));
  REQUIRE(torchrun);
  CHECK(torchrun->find("RANK=3 WORLD_SIZE=8 LOCAL_RANK=3 are set") != std::string::npos);
  CHECK(torchrun->find("scripts/launch.sh -n 8 -- zerotrain") != std::string::npos);
  CHECK(torchrun->find("mpirun -np 8 / srun -n 8") != std::string::npos);
  CHECK(foreign_launcher_problem(env_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}}))->find("WORLD_SIZE=2 are set") !=
        std::string::npos);
  // Under an MPI launcher the variables are the user's business.
  for (const char* mpi : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    CHECK_FALSE(foreign_launcher_problem(env_of({{"RANK", "1"}, {"WORLD_SIZE", "4"}, {mpi, "4"}})));
  CHECK_FALSE(foreign_launcher_problem(env_of({})));
  CHECK_FALSE(foreign_launcher_problem(env_of({{"RANK", "0"}, {"WORLD_SIZE", "1"}})));
  CHECK_FALSE(foreign_launcher_problem(env_of({{"WORLD_SIZE", "4"}})));  // no RANK: not a launcher's rank
}

TEST_CASE("a log with no progress line gets a step line whenever the last one is quiet_seconds old") {
  std::ostringstream out;
  auto previous = spdlog::default_logger();
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  sink->set_pattern("%v");
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("test", sink));
  auto record = [](int64_t step, bool logged) {
    StepRecord r;
    r.step = step;
    r.loss = 2.5;
    r.logged = logged;
    return r;
  };
  StepLog log(100, 0.2);
  log.step(record(1, true));   // logged: a line
  log.step(record(2, false));  // right after it: nothing
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  log.step(record(3, false));  // quiet for longer than 0.2 s: a line
  log.step(record(4, false));  // right after it again: nothing
  StepLog plain(100);          // quiet_seconds 0 (a progress line shows): only the logged steps
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  plain.step(record(5, false));
  spdlog::set_default_logger(previous);
  const std::string lines = out.str();
  INFO(lines);
  CHECK(lines.find("step     1/100 | loss 2.5000") != std::string::npos);
  CHECK(lines.find("step     2/100") == std::string::npos);
  CHECK(lines.find("step     3/100 | loss 2.5000") != std::string::npos);
  CHECK(lines.find("step     4/100") == std::string::npos);
  CHECK(lines.find("step     5/100") == std::string::npos);
  CHECK(kQuietLogSeconds == 30.0);
}
