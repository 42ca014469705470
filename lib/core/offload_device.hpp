#pragma once
// Where optimizer state or stage-3 parameter shards live (zero_optimization.offload_optimizer.device,
// offload_param.device).
#include "core/name_table.hpp"

namespace zt {

enum class OffloadDevice { None, Cpu, Nvme };
inline constexpr auto kOffloadDeviceNames = name_table<OffloadDevice>(
    {{OffloadDevice::None, "none"}, {OffloadDevice::Cpu, "cpu"}, {OffloadDevice::Nvme, "nvme"}});

}  // namespace zt
