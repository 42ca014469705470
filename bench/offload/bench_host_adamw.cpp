// The host AdamW that updates offloaded optimizer state (the CPU backend's VectorOps::adamw: fp32
// master, m and v, bf16 gradients in, bf16 parameters out) beside the memory bandwidth of this
// machine measured in the same run with a copy loop. Not a test: it prints, nothing passes or fails.
//
//   OMP_NUM_THREADS=2 build/bench/offload/bench_host_adamw --elements 25000000
#include <CLI/CLI.hpp>
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/buffer.hpp"
#include "core/clock.hpp"
#include "core/rng.hpp"
#include "kernels/backend.hpp"

using namespace zt;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"host AdamW throughput against memory bandwidth"};
  size_t n = 25000000;
  int repeats = 7;
  app.add_option("--elements", n, "parameters updated per step")->capture_default_str();
  app.add_option("--repeats", repeats, "timed repetitions (median reported)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  Buffer<float> master(MemCategory::Optimizer, n), m(MemCategory::Optimizer, n), v(MemCategory::Optimizer, n);
  Buffer<uint16_t> grads(MemCategory::Grads, n), params(MemCategory::Params, n);
  Rng rng(1);
  for (size_t i = 0; i < n; ++i) {
    master[i] = float(rng.normal() * 0.02);
    grads[i] = f32_to_bf16(float(rng.normal()));
  }
  std::vector<AdamSegment> segments;
  for (size_t a = 0; a < n; a += 16384) segments.push_back({a, std::min<size_t>(16384, n - a), true});
  const AdamWHyper hyper{1e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, true, true};
  VectorOps& ops = cpu_backend().vector;

  // Memory bandwidth: a parallel copy of a buffer as large as the optimizer state, read + write.
  const size_t copy_floats = 3 * n;
  Buffer<float> src(MemCategory::Buffers, copy_floats), dst(MemCategory::Buffers, copy_floats);
  // Real pages on both sides: untouched memory reads as the kernel's one shared zero page.
  for (size_t i = 0; i < copy_floats; ++i) src[i] = float(i & 1023);
  std::vector<double> copy_s, adam_s;
  for (int r = 0; r < repeats + 1; ++r) {
    auto t0 = SteadyClock::now();
#pragma omp parallel for schedule(static)
    for (size_t c = 0; c < copy_floats; c += 65536)
      std::memcpy(dst.data() + c, src.data() + c, std::min<size_t>(65536, copy_floats - c) * sizeof(float));
    if (r > 0) copy_s.push_back(seconds_since(t0));
    t0 = SteadyClock::now();
    ops.adamw(segments, {master.data(), m.data(), v.data()}, {grads.data(), DType::BF16, MemSpace::Host}, 1.0f,
              {params.data(), DType::BF16, MemSpace::Host}, hyper, r + 1);
    if (r > 0) adam_s.push_back(seconds_since(t0));
  }
  const double copy_bytes = 2.0 * double(copy_floats) * sizeof(float);
  const double adam_bytes = double(n) * (3 * 4 * 2 + 2 + 2);  // master, m, v read and written; grad in, param out
  const double c = median(copy_s), a = median(adam_s);
  std::printf("threads %d, %zu parameters\n", omp_get_max_threads(), n);
  std::printf("memory bandwidth (copy loop):     %7.2f GB/s  (%.1f ms for %.0f MB read + written)\n",
              copy_bytes / c / 1e9, 1e3 * c, copy_bytes / 1e6);
  std::printf("host AdamW (bf16 grads/params):   %7.2f GB/s  %7.1f M params/s  (%.1f ms per step, %.0f%% of the copy "
              "loop's bandwidth)\n",
              adam_bytes / a / 1e9, double(n) / a / 1e6, 1e3 * a, 100.0 * (adam_bytes / a) / (copy_bytes / c));
  return 0;
}
