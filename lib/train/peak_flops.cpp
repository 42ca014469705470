#include "train/peak_flops.hpp"

#include <chrono>
#include <vector>

#include "kernels/cpu/gemm.hpp"

namespace zt {

double measure_peak_flops() {
  const int n = 512;
  std::vector<float> a(size_t(n) * n, 0.5f), b(size_t(n) * n, 0.25f), c(size_t(n) * n);
  auto run = [&] { cpu::gemm(cpu::Trans::No, cpu::Trans::No, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n); };
  run();  // warm-up: oneDNN picks and compiles its kernel
  double best = 1e30;
  for (int i = 0; i < 3; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    run();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return 2.0 * n * n * n / best;
}

}  // namespace zt
