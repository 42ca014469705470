#pragma once
// How much memory this machine has: MemTotal of /proc/meminfo.
#include <cstdint>
#include <optional>
#include <string>

namespace zt {

// Bytes of MemTotal in `meminfo` (the text of /proc/meminfo); nullopt when it has no such line.
std::optional<uint64_t> mem_total_bytes(const std::string& meminfo);
// This machine's MemTotal; nullopt where /proc/meminfo cannot be read.
std::optional<uint64_t> machine_memory_bytes();

}  // namespace zt
