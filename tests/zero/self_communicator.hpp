#pragma once
// A world of one, without MPI: every collective is a copy. The single-process reference of the
// parity tests runs on it inside a multi-rank job.
#include <cstring>
#include <numeric>

#include "comm/communicator.hpp"

namespace zt::test {

class DoneWork : public Work {
public:
  void wait() override {}
  bool is_completed() override { return true; }
};

class SelfCommunicator : public Communicator {
public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  int local_rank() const override { return 0; }
  int local_size() const override { return 1; }
  WorkPtr all_reduce(const void* send, void* recv, size_t count, DType dtype, ReduceOp, bool) override {
    std::memmove(recv, send, count * dtype_size(dtype));
    return std::make_shared<DoneWork>();
  }
  WorkPtr reduce_scatter(const void* send, void* recv, std::span<const size_t> counts, DType dtype, ReduceOp,
                         bool) override {
    std::memmove(recv, send, counts[0] * dtype_size(dtype));
    return std::make_shared<DoneWork>();
  }
  WorkPtr all_gather(const void* send, void* recv, std::span<const size_t> counts, DType dtype, bool) override {
    std::memmove(recv, send, counts[0] * dtype_size(dtype));
    return std::make_shared<DoneWork>();
  }
  WorkPtr broadcast(void*, size_t, DType, int, bool) override { return std::make_shared<DoneWork>(); }
  WorkPtr barrier(bool) override { return std::make_shared<DoneWork>(); }
  CommStats stats() const override { return {}; }
  void set_step(int64_t) override {}
};

}  // namespace zt::test
