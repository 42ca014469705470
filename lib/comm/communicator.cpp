#include "comm/communicator.hpp"

#include <vector>

namespace zt {

std::string_view comm_op_name(CommOp op) {
  switch (op) {
    case CommOp::AllReduce: return "all_reduce";
    case CommOp::ReduceScatter: return "reduce_scatter";
    case CommOp::AllGather: return "all_gather";
    case CommOp::Broadcast: return "broadcast";
    case CommOp::Barrier: return "barrier";
    case CommOp::AllToAll: return "all_to_all";
    case CommOp::Count: break;
  }
  return "?";
}

WorkPtr Communicator::reduce_scatter(const void* send, void* recv, size_t count, DType dtype,
                                     ReduceOp op, bool async) {
  std::vector<size_t> counts(size_t(world_size()), count);
  return reduce_scatter(send, recv, std::span<const size_t>(counts), dtype, op, async);
}

WorkPtr Communicator::all_gather(const void* send, void* recv, size_t count, DType dtype,
                                 bool async) {
  std::vector<size_t> counts(size_t(world_size()), count);
  return all_gather(send, recv, std::span<const size_t>(counts), dtype, async);
}

}  // namespace zt
