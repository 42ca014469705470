#include "train/run.hpp"

#include <spdlog/spdlog.h>

#include "comm/mpi_communicator.hpp"
#include "train/memory_plan.hpp"
#include "train/trainer.hpp"

namespace zt {

int run_training(const config::Config& config, const RunOptions& options) {
  auto comm = make_mpi_communicator(config.training.comm_timeout);
  if (options.dry_run) {
    if (comm->rank() == 0) print_memory_plan(config, config.world_size);  // --world-size N plans for N
    return 0;
  }
  try {
    Trainer trainer(config, *comm);
    return trainer.run();
  } catch (const SetupFailed&) {
    return 1;  // bad input, reported once by the rank that found it; no rank is mid-collective
  }
}

}  // namespace zt
