// What a person sees start and go: the progress line's text and times, and the refusal of ranks
// that a PyTorch-style launcher started without MPI.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "comm/foreign_launcher.hpp"
#include "metrics/progress.hpp"

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
