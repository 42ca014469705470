#include "train/expert_group.hpp"

#include <memory>
#include <vector>

#include "core/error.hpp"

namespace zt {

ExpertGroup expert_group(Communicator& comm, int size) {
  const int world = comm.world_size(), rank = comm.rank();
  if (size < 1 || world % size != 0) fail("expert parallelism: groups of {} ranks do not divide {} ranks", size, world);
  ExpertGroup g;
  g.size = size;
  g.index = rank % size;
  const size_t first = size_t(rank - g.index);
  auto sends = std::make_shared<std::vector<size_t>>(size_t(world), 0);
  auto recvs = std::make_shared<std::vector<size_t>>(size_t(world), 0);
  g.all_to_all = [&comm, first, sends, recvs](const void* send, std::span<const size_t> send_counts, void* recv,
                                              std::span<const size_t> recv_counts, DType dtype) {
    for (size_t q = 0; q < send_counts.size(); ++q) {
      (*sends)[first + q] = send_counts[q];
      (*recvs)[first + q] = recv_counts[q];
    }
    comm.all_to_all(send, *sends, recv, *recvs, dtype);
  };
  return g;
}

}  // namespace zt
