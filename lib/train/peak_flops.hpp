#pragma once
// The denominator of MFU on the CPU backend: the fp32 peak of the cores this rank computes on,
// cores x clock x FLOPs per cycle (two FMA units of the widest vector ISA the CPU reports). A rank
// computes on its threads, but never on more than its share of the machine's cores: 4 ranks on
// 2 cores get half a core each, so MFU stays a fraction of what the hardware can do.
#include <string>

namespace zt {

struct PeakFlops {
  double flops = 0;         // per second, for this rank
  std::string explanation;  // e.g. "2 cores x 2.10 GHz x 64 FLOP/cycle (AVX-512 FMA)"
};

PeakFlops cpu_peak_flops(int ranks_on_this_machine);

}  // namespace zt
