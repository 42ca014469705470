#include "train/expert_group.hpp"

#include "core/error.hpp"

namespace zt {

std::unique_ptr<Communicator> split_expert_group(Communicator& world, int size) {
  const int ranks = world.world_size(), rank = world.rank();
  if (size < 1 || ranks % size != 0) fail("expert parallelism: groups of {} ranks do not divide {} ranks", size, ranks);
  return world.split(rank / size, rank % size);
}

std::unique_ptr<Communicator> split_expert_data_group(Communicator& world, int size) {
  const int rank = world.rank();
  if (size < 1 || world.world_size() % size != 0)
    fail("expert parallelism: groups of {} ranks do not divide {} ranks", size, world.world_size());
  return world.split(rank % size, rank);
}

ExpertPlace expert_place(const Communicator& world, int size) { return {size, world.rank() % size}; }

ExpertGroup expert_group(Communicator& group) {
  ExpertGroup g;
  g.size = group.world_size();
  g.index = group.rank();
  g.all_to_all = [&group](const void* send, std::span<const size_t> send_counts, void* recv,
                          std::span<const size_t> recv_counts, DType dtype) {
    group.all_to_all(send, send_counts, recv, recv_counts, dtype);
  };
  return g;
}

}  // namespace zt
