#include "comm/world.hpp"

#include <mpi.h>

#include <climits>
#include <cstdlib>

#include "comm/local_communicator.hpp"
#include "comm/mpi_communicator.hpp"
#include "core/error.hpp"

#ifdef ZT_HAVE_NCCL
#include "comm/nccl_communicator.hpp"
#endif

namespace zt {

bool World::launched_by_mpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(var)) return true;
  return false;
}

World::World(int& argc, char**& argv) {
  if (!launched_by_mpi()) return;  // one rank: info_ says so, MPI stays untouched
  mpi_ = std::make_unique<MpiSession>(argc, argv);
  info_ = mpi_->world();
}

World::~World() = default;

bool World::mpi_thread_multiple() const { return mpi_ && mpi_->thread_level() >= MPI_THREAD_MULTIPLE; }

int World::first_failure(bool failed) const {
  if (!mpi_) return failed ? 0 : -1;
  int mine = failed ? info_.rank : INT_MAX, first = INT_MAX;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return first == INT_MAX ? -1 : first;
}

std::vector<CpuMask> World::local_cpu_masks(const CpuMask& mine) const {
  if (!mpi_) return {mine};
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, info_.rank, MPI_INFO_NULL, &local);
  int size = 1;
  MPI_Comm_size(local, &size);
  std::vector<CpuMask> all(size_t(size), mine);
  MPI_Allgather(&mine, int(sizeof(CpuMask)), MPI_BYTE, all.data(), int(sizeof(CpuMask)), MPI_BYTE, local);
  MPI_Comm_free(&local);
  return all;
}

std::unique_ptr<Communicator> World::communicator(Device& device, double timeout_seconds) const {
  if (!mpi_) return make_local_communicator(device);
  if (device.kind() == DeviceKind::Cuda) {
#ifdef ZT_HAVE_NCCL
    NcclCommOptions o;
    o.timeout_seconds = timeout_seconds;
    o.compute_stream = static_cast<cudaStream_t>(device.compute().handle);
    return make_nccl_communicator(o);
#else
    fail("this build of zerotrain has no NCCL: tensors on a GPU cannot be communicated");
#endif
  }
  return make_mpi_communicator(timeout_seconds);
}

}  // namespace zt
