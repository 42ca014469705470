#pragma once
// The denominator of MFU on the CPU backend: the fp32 peak of the cores this rank computes on,
// threads x clock x FLOPs per cycle (two FMA units of the widest vector ISA the CPU reports).
#include <string>

namespace zt {

struct PeakFlops {
  double flops = 0;         // per second, for this rank
  std::string explanation;  // e.g. "2 threads x 2.10 GHz x 64 FLOP/cycle (AVX-512 FMA)"
};

PeakFlops cpu_peak_flops();

}  // namespace zt
