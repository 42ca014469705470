#include "train/peak_flops.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

namespace zt {

PeakFlops cpu_peak_flops(int ranks_on_this_machine) {
  double mhz = 0;
  std::string flags;
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);) {
    auto value = line.substr(line.find(':') + 1);
    if (mhz == 0 && line.rfind("cpu MHz", 0) == 0) mhz = std::stod(value);
    if (flags.empty() && line.rfind("flags", 0) == 0) flags = " " + value + " ";
  }
  auto has = [&](const char* f) { return flags.find(fmt::format(" {} ", f)) != std::string::npos; };
  int per_cycle = 8;  // SSE: 4 lanes x add + mul
  std::string isa = "SSE";
  if (has("avx512f")) per_cycle = 64, isa = "AVX-512 FMA";
  else if (has("avx2") && has("fma")) per_cycle = 32, isa = "AVX2 FMA";
  else if (has("avx")) per_cycle = 16, isa = "AVX";
  if (mhz == 0) mhz = 2000;  // no clock reported: assume 2 GHz and say so below
  const int threads = omp_get_max_threads();
  const double share = double(std::max(1u, std::thread::hardware_concurrency())) / std::max(1, ranks_on_this_machine);
  const double cores = std::min(double(threads), share);
  PeakFlops p;
  p.flops = cores * mhz * 1e6 * per_cycle;
  std::string who = cores < threads ? fmt::format("{:.3g} cores (machine's share per rank)", cores)
                                    : fmt::format("{} core{}", threads, threads == 1 ? "" : "s");
  p.explanation = fmt::format("{} x {:.2f} GHz x {} FLOP/cycle ({})", who, mhz / 1000, per_cycle, isa);
  return p;
}

}  // namespace zt
