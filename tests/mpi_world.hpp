#pragma once
// The world of a multi-rank test started under mpirun, and a directory every rank of it names the same.
#include <filesystem>
#include <memory>
#include <string>

#include "comm/control_channel.hpp"
#include "comm/mpi_communicator.hpp"

namespace zt::test {

// Made on first use; the timeout lets 4 ranks on 2 busy cores finish and a broken test abort.
inline Communicator& world() {
  static auto comm = make_mpi_communicator(120.0);
  return *comm;
}

// <build>/test-runs/<test>-np<world size>/<name>, emptied by rank 0 before every rank goes on.
inline std::string shared_dir(const std::string& test, const std::string& name) {
  auto& comm = world();
  const std::filesystem::path dir = std::filesystem::path(ZT_BINARY_DIR) / "test-runs" /
                                    (test + "-np" + std::to_string(comm.world_size())) / name;
  if (comm.rank() == 0) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  comm.control().barrier();
  return dir.string();
}

}  // namespace zt::test
