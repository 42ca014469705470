// The peak FLOP/s behind MFU: the GPU table by device name, the CPU's formula, ZT_PEAK_TFLOPS.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>

#include "core/error.hpp"
#include "metrics/peak_flops.hpp"

using namespace zt;
using Catch::Matchers::Contains;

TEST_CASE("GPU peaks come from the table by the device's name and the training dtype", "[train][mfu]") {
  struct Case {
    const char* name;
    double bf16, fp32;  // TFLOP/s
  };
  const Case cases[] = {
      {"NVIDIA H100 80GB HBM3", 989, 67},  {"NVIDIA H100 PCIe", 756, 51.2},   {"NVIDIA H100 NVL", 835, 60},
      {"NVIDIA H200", 989, 67},            {"NVIDIA GH200 480GB", 989, 67},    {"NVIDIA A100-SXM4-80GB", 312, 19.5},
      {"NVIDIA A100 80GB PCIe", 312, 19.5}, {"NVIDIA A10", 125, 31.2},         {"NVIDIA L40S", 362, 91.6},
      {"NVIDIA L4", 121, 30.3},            {"NVIDIA GeForce RTX 4090", 165, 82.6},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const PeakFlops bf16 = gpu_peak_flops(c.name, DType::BF16), fp32 = gpu_peak_flops(c.name, DType::F32);
    CHECK(bf16.flops == Approx(c.bf16 * 1e12));
    CHECK(fp32.flops == Approx(c.fp32 * 1e12));
    CHECK_THAT(bf16.explanation, Contains(c.name) && Contains("bf16"));
  }
  // Names that only contain a known one as part of a word are not taken for it.
  for (const char* unknown : {"NVIDIA A10G", "NVIDIA H800", "Tesla V100-SXM2-16GB"}) {
    INFO(unknown);
    const PeakFlops p = gpu_peak_flops(unknown, DType::BF16);
    CHECK(std::isnan(p.flops));
    CHECK_THAT(p.explanation, Contains("ZT_PEAK_TFLOPS"));
  }
}

TEST_CASE("ZT_PEAK_TFLOPS overrides the peak of any device; a bad value names it", "[train][mfu]") {
  unsetenv("ZT_PEAK_TFLOPS");
  const PeakFlops cpu = peak_flops(cpu_device(), DType::F32, 1);
  CHECK(cpu.flops == cpu_peak_flops(1).flops);
  CHECK(cpu.flops > 0);
  setenv("ZT_PEAK_TFLOPS", "123.5", 1);
  CHECK(peak_flops(cpu_device(), DType::BF16, 1).flops == Approx(123.5e12));
  CHECK_THAT(peak_flops(cpu_device(), DType::BF16, 1).explanation, Contains("ZT_PEAK_TFLOPS"));
  for (const char* bad : {"", "fast", "-3", "0", "12x", "inf"}) {
    setenv("ZT_PEAK_TFLOPS", bad, 1);
    INFO("ZT_PEAK_TFLOPS=" << bad);
    CHECK_THROWS_WITH(peak_flops(cpu_device(), DType::F32, 1),
                      Contains("ZT_PEAK_TFLOPS") && Contains("positive number"));
  }
  unsetenv("ZT_PEAK_TFLOPS");
}
