// The start line says how many threads a rank computes with and why: the cores it was given (its
// affinity mask, shared with the other ranks of the machine), or the user's OMP_NUM_THREADS; and
// idle OpenMP threads sleep, the process having started again with OMP_WAIT_POLICY=passive (what
// libgomp reads when it loads), unless the user chose a policy.
#include <sched.h>

#include <catch2/catch.hpp>

#include <thread>

#include "run_helpers.hpp"

using namespace zt::test;

namespace {

// The zerotrain command with none of the variables under test inherited from the test's environment.
std::string clean_env(const std::string& vars = "") {
  return "env -u OMP_NUM_THREADS -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u SLURM_CPUS_PER_TASK -u SLURM_CPUS_ON_NODE " +
         vars + " ";
}

std::string short_run() { return std::string(ZT_ZEROTRAIN) + " --config zero2 --steps 2"; }

std::string start_of(const std::string& command, const std::string& dir) {
  const int code = run_command(command, dir + "/out.log");
  std::string out = read_file(dir + "/out.log");
  INFO(out);
  REQUIRE(code == 0);
  return out;
}

}  // namespace

TEST_CASE("the start line gives the threads: the cores of the affinity mask, or OMP_NUM_THREADS", "[e2e][threads]") {
  auto dir = fresh_dir("threads");
  std::string out = start_of(clean_env() + "taskset -c 0 " + short_run(), dir);
  CHECK(out.find("threads: 1 (the 1 CPU of its affinity mask 0); idle OpenMP threads sleep "
                 "(OMP_WAIT_POLICY=passive)") != std::string::npos);
  if (std::thread::hardware_concurrency() >= 2) {
    out = start_of(clean_env() + "taskset -c 0,1 " + short_run(), dir);
    CHECK(out.find("threads: 2 (the 2 CPUs of its affinity mask 0-1)") != std::string::npos);
  }
  out = start_of(clean_env("OMP_NUM_THREADS=3") + "taskset -c 0 " + short_run(), dir);
  CHECK(out.find("threads: 3 (OMP_NUM_THREADS=3; the cores it was given: 1, the 1 CPU of its affinity mask 0)") !=
        std::string::npos);
  out = start_of(clean_env("OMP_WAIT_POLICY=active") + short_run(), dir);
  CHECK(out.find("idle OpenMP threads spin (OMP_WAIT_POLICY=active)") != std::string::npos);
}

TEST_CASE("ranks on one machine share its cores", "[e2e][threads][launch]") {
  auto dir = fresh_dir("threads-launch");
  // Two ranks on the same CPUs (the launcher binds nothing): half of them each.
  std::string out = start_of(clean_env() + launch(2) + " --config zero2 --steps 2", dir);
  cpu_set_t mask;
  REQUIRE(sched_getaffinity(0, sizeof mask, &mask) == 0);
  const int share = std::max(1, CPU_COUNT(&mask) / 2);
  CHECK(out.find("threads: " + std::to_string(share) + " on rank 0 (a share of ") != std::string::npos);
  CHECK(out.find(", shared by 2 ranks on this machine); idle OpenMP threads sleep") != std::string::npos);
}

TEST_CASE("idle OpenMP threads sleep: the OpenMP runtime was loaded with OMP_WAIT_POLICY=passive, and the process "
          "keeps its name",
          "[e2e][threads]") {
  auto dir = fresh_dir("threads-passive");
  const std::string log = dir + "/out.log";
  Background run(clean_env() + std::string(ZT_ZEROTRAIN) + " --config zero2 --steps 100000", log);
  REQUIRE(wait_for_text(log, "step     1/", 60));
  // The environment the process image started with, which libgomp read before main().
  std::string environ = read_file("/proc/" + std::to_string(run.pid()) + "/environ");
  for (char& c : environ)
    if (c == '\0') c = '\n';
  // What ps, top and pkill see: the program's name, not the "exe" of /proc/self/exe.
  const std::string comm = read_file("/proc/" + std::to_string(run.pid()) + "/comm");
  run.signal(SIGKILL);
  run.wait(30);
  CHECK(("\n" + environ).find("\nOMP_WAIT_POLICY=passive\n") != std::string::npos);
  CHECK(comm == "zerotrain\n");
}
