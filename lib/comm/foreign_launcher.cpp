#include "comm/foreign_launcher.hpp"

#include <fmt/format.h>

#include <cstdlib>

namespace zt {

std::optional<std::string> foreign_launcher_problem(const EnvLookup& env) {
  // Set for every rank by Open MPI's mpirun, and by srun or MPICH's launchers (PMI/PMIx).
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (env(var)) return std::nullopt;
  const char* world = env("WORLD_SIZE");
  const char* rank = env("RANK");
  if (!world || !rank) return std::nullopt;
  const std::string w = world;
  if (w.empty() || w == "1") return std::nullopt;
  const char* local = env("LOCAL_RANK");
  return fmt::format(
      "this process was started by a PyTorch-style launcher (torchrun, the deepspeed launcher): RANK={} "
      "WORLD_SIZE={}{} are set, but no MPI launcher started it, so every process would train alone as rank 0 of "
      "1. zerotrain takes its ranks from MPI: start the job with scripts/launch.sh -n {} -- zerotrain ... "
      "(it accepts --num_gpus, --nproc_per_node, --hostfile), or with mpirun -np {} / srun -n {}",
      rank, w, local ? fmt::format(" LOCAL_RANK={}", local) : "", w, w, w);
}

std::optional<std::string> foreign_launcher_problem() {
  return foreign_launcher_problem([](const char* name) -> const char* { return std::getenv(name); });
}

}  // namespace zt
