#pragma once
// The process's place in the job and how it reaches the other ranks. Started by mpirun or srun
// (their environment variables are present), MPI is initialised and tensors travel over MPI or
// NCCL; started alone, the world is one rank and MPI is never touched (a laptop, one GPU).
#include <memory>
#include <string_view>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/mpi_session.hpp"
#include "core/device.hpp"
#include "core/threads.hpp"

namespace zt {

class World {
public:
  // Whether an MPI launcher started this process (Open MPI's, PMI or PMIx variables).
  static bool launched_by_mpi();

  World(int& argc, char**& argv);
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  const WorldInfo& info() const { return info_; }
  int rank() const { return info_.rank; }
  int size() const { return info_.world_size; }
  bool uses_mpi() const { return mpi_ != nullptr; }
  bool mpi_thread_multiple() const;  // MPI lets every thread call it at once

  // The affinity masks of the ranks on this machine, `mine` among them (collective).
  std::vector<CpuMask> local_cpu_masks(const CpuMask& mine) const;

  // The lowest rank on which `failed` is true, or -1 (collective; usable before any communicator).
  int first_failure(bool failed) const;

  // The communicator for tensors in `device`'s memory: NCCL for a GPU, MPI for host memory, a
  // local one in a world of one rank. Collective. timeout_seconds: per collective, <= 0 never.
  std::unique_ptr<Communicator> communicator(Device& device, double timeout_seconds) const;

private:
  std::unique_ptr<MpiSession> mpi_;
  WorldInfo info_;
};

}  // namespace zt
