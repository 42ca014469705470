#pragma once
// The expert-parallel group of a rank (DeepSpeed's): with groups of `size`, ranks
// [g·size, (g+1)·size) hold every expert once between them, the rank's place in its group is
// rank % size, and the ranks with the same place hold the same experts.
#include <memory>

#include "comm/communicator.hpp"
#include "model/expert_layout.hpp"
#include "model/moe_block.hpp"

namespace zt {

// The group of `world`'s rank as a communicator of its own (collective over `world`), ranked by
// place: the ranks [g·size, (g+1)·size).
std::unique_ptr<Communicator> split_expert_group(Communicator& world, int size);

// The ranks holding the same experts as `world`'s rank, DeepSpeed's expert data-parallel group: the
// ranks at the same place of every group of `size` (collective over `world`). Where the experts' parameters,
// gradients and optimizer state are sharded (model/expert_layout.hpp).
std::unique_ptr<Communicator> split_expert_data_group(Communicator& world, int size);

// The place of `world`'s rank in groups of `size` ranks.
ExpertPlace expert_place(const Communicator& world, int size);

// The model's view of the group: its size, this rank's place and its all-to-all. `group` must
// outlive what is returned.
ExpertGroup expert_group(Communicator& group);

}  // namespace zt
