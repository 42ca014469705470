#pragma once
// The denominator of MFU: the peak FLOP/s of what one rank computes on.
//
// CPU: the fp32 peak of the cores this rank computes on, cores x clock x FLOPs per cycle (two FMA
// units of the widest vector ISA the CPU reports). A rank computes on its threads, but never on
// more than its share of the machine's cores: 4 ranks on 2 cores get half a core each, so MFU
// stays a fraction of what the hardware can do.
// GPU: the vendor's dense peak for the training dtype, from a table keyed by the device's name:
// tensor-core bf16 for bf16 training, plain fp32 (no TF32: the fp32 matmuls do not use it) for
// fp32 training. A GPU the table does not know has no peak (NaN: MFU is reported as null).
// The environment variable ZT_PEAK_TFLOPS (TFLOP/s per rank) overrides either.
#include <string>

#include "core/device.hpp"
#include "core/dtype.hpp"

namespace zt {

struct PeakFlops {
  double flops = 0;         // per second, for this rank
  std::string explanation;  // e.g. "2 cores x 2.10 GHz x 64 FLOP/cycle (AVX-512 FMA)"
};

PeakFlops cpu_peak_flops(int ranks_on_this_machine);
PeakFlops gpu_peak_flops(const std::string& device_name, DType training_dtype);
// ZT_PEAK_TFLOPS when set (throws zt::Error naming it when it is not a positive number), else the
// peak of the device's kind.
PeakFlops peak_flops(const Device& device, DType training_dtype, int ranks_on_this_machine);

}  // namespace zt
