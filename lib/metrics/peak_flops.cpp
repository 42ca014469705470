#include "metrics/peak_flops.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <thread>

#include "core/error.hpp"

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

namespace {

// Dense (no sparsity) peaks per GPU in TFLOP/s from the vendors' data sheets: bf16 on tensor cores
// with fp32 accumulation, and fp32 on the CUDA cores. Matched as whole words of the device name,
// the first match wins (so "H100 PCIe" before "H100", "A100" is not "A10", "L40S" is not "L4").
struct GpuPeak {
  const char* name;
  double bf16, fp32;
};
constexpr GpuPeak kGpuPeaks[] = {
    {"H100 PCIe", 756, 51.2},  {"H100 NVL", 835, 60},     {"H100", 989, 67},  // H100 SXM: "H100 80GB HBM3"
    {"H200 NVL", 835, 60},     {"GH200", 989, 67},        {"H200", 989, 67},
    {"A100", 312, 19.5},       {"A800", 312, 19.5},       {"A10", 125, 31.2},
    {"L40S", 362, 91.6},       {"L40", 181, 90.5},        {"L4", 121, 30.3},
    {"RTX 4090", 165, 82.6},   {"RTX 6000 Ada", 364, 91.1},
};

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// Whether `word` occurs in `text` with no letter or digit right before or after it.
bool has_word(const std::string& text, const std::string& word) {
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    const size_t end = at + word.size();
    if ((at == 0 || !word_char(text[at - 1])) && (end == text.size() || !word_char(text[end]))) return true;
  }
  return false;
}

}  // namespace

PeakFlops gpu_peak_flops(const std::string& device_name, DType training_dtype) {
  const bool bf16 = training_dtype != DType::F32;
  for (const GpuPeak& g : kGpuPeaks)
    if (has_word(device_name, g.name)) {
      const double tflops = bf16 ? g.bf16 : g.fp32;
      return {tflops * 1e12, fmt::format("{} TFLOP/s, the dense {} peak of {} (table entry \"{}\")", tflops,
                                         bf16 ? "bf16 tensor-core" : "fp32", device_name, g.name)};
    }
  return {std::numeric_limits<double>::quiet_NaN(),
          fmt::format("unknown: {} is not in the GPU table (set ZT_PEAK_TFLOPS to its peak in TFLOP/s)", device_name)};
}

PeakFlops peak_flops(const Device& device, DType training_dtype, int ranks_on_this_machine) {
  if (const char* env = std::getenv("ZT_PEAK_TFLOPS")) {
    char* end = nullptr;
    const double tflops = std::strtod(env, &end);
    if (end == env || *end != '\0' || !std::isfinite(tflops) || tflops <= 0)
      fail("ZT_PEAK_TFLOPS: \"{}\" is not a positive number (the peak TFLOP/s of one rank, for MFU)", env);
    return {tflops * 1e12, fmt::format("ZT_PEAK_TFLOPS={}", env)};
  }
  if (device.kind() == DeviceKind::Cuda) return gpu_peak_flops(device.name(), training_dtype);
  return cpu_peak_flops(ranks_on_this_machine);
}

}  // namespace zt
