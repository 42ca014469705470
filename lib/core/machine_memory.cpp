#include "core/machine_memory.hpp"

#include <fstream>
#include <sstream>

namespace zt {

std::optional<uint64_t> mem_total_bytes(const std::string& meminfo) {
  std::istringstream in(meminfo);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("MemTotal:", 0) != 0) continue;
    std::istringstream fields(line.substr(9));
    uint64_t kib = 0;
    std::string unit;
    if (fields >> kib >> unit && unit == "kB") return kib * 1024;
    return std::nullopt;
  }
  return std::nullopt;
}

std::optional<uint64_t> machine_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return mem_total_bytes(text.str());
}

}  // namespace zt
