#pragma once
// The expert-parallel group of a rank (DeepSpeed's): with groups of `size`, ranks
// [g·size, (g+1)·size) hold every expert once between them, the rank's place in its group is
// rank % size, and the ranks with the same place hold the same experts.
#include <memory>

#include "comm/communicator.hpp"
#include "model/moe_block.hpp"

namespace zt {

// The group of `world`'s rank as a communicator of its own (collective over `world`), ranked by
// place: the ranks [g·size, (g+1)·size).
std::unique_ptr<Communicator> split_expert_group(Communicator& world, int size);

// The model's view of the group: its size, this rank's place and its all-to-all. `group` must
// outlive what is returned.
ExpertGroup expert_group(Communicator& group);

}  // namespace zt
