#pragma once
// A world of one, without MPI (comm/local_communicator.hpp), as a value a test can declare: the
// single-process reference of the parity tests runs on it inside a multi-rank job.
#include <memory>

#include "comm/local_communicator.hpp"

namespace zt::test {

class SelfCommunicator {
public:
  operator Communicator&() { return *comm_; }
  Communicator* operator->() { return comm_.get(); }

private:
  std::unique_ptr<Communicator> comm_ = make_local_communicator();
};

}  // namespace zt::test
