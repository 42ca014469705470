// One rank started without a launcher: the world is one rank, MPI is never initialised, and the
// numbers are those of a one-rank MPI job.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>

#include "comm/mpi_communicator.hpp"
#include "comm/world.hpp"
#include "engine_harness.hpp"

using namespace zt;
using namespace zt::test;

TEST_CASE("one rank without a launcher trains without initialising MPI, as a one-rank MPI job does",
          "[train][world]") {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"}) unsetenv(var);
  char name[] = "test_single_rank";
  char* args[] = {name, nullptr};
  int argc = 1;
  char** argv = args;
  RunResult local;
  {
    World world(argc, argv);
    CHECK_FALSE(world.uses_mpi());
    CHECK(world.size() == 1);
    CHECK(world.rank() == 0);
    CHECK(world.first_failure(false) == -1);
    auto comm = world.communicator(cpu_device(), 60.0);
    for (int stage : {0, 3}) {
      local = train(make_config({stage, "bf16", 1}), *comm, 3);
      CHECK(local.losses.back() < local.losses.front());
    }
  }
  int initialised = 1;
  MPI_Initialized(&initialised);
  CHECK(initialised == 0);

  // The same run on MPI as a singleton: the same bits.
  auto mpi = make_mpi_communicator(60.0);
  RunResult reference = train(make_config({3, "bf16", 1}), *mpi, 3);
  CHECK(reference.losses == local.losses);
  CHECK(std::memcmp(reference.params.data(), local.params.data(), local.params.size() * sizeof(float)) == 0);
}
