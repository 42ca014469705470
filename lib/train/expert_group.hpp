#pragma once
// The expert-parallel group of a rank (DeepSpeed's): with groups of `size`, ranks
// [g·size, (g+1)·size) hold every expert once between them, the rank's place in its group is
// rank % size, and the ranks with the same place hold the same experts.
#include "comm/communicator.hpp"
#include "model/moe_block.hpp"

namespace zt {

// Its all-to-all is the communicator's over the world, every piece of a rank outside the group
// empty. `comm` must outlive what is returned.
ExpertGroup expert_group(Communicator& comm, int size);

}  // namespace zt
