#pragma once
// A world of one rank, without MPI: every collective is a copy on the device (nothing to send),
// the control channel a no-op. zerotrain runs on it when started without a launcher, and the
// single-process reference of the parity tests runs on it inside a multi-rank job.
#include <memory>

#include "comm/communicator.hpp"
#include "core/device.hpp"

namespace zt {

std::unique_ptr<Communicator> make_local_communicator(Device& device = cpu_device());

}  // namespace zt
