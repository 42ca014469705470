// The CPU's attention (kernels/cpu/attention), forward then backward, of a sliding-window layer
// beside a full one: the sliding layer's time grows with W·T (its 64-row blocks start at their
// band's first key), the full layer's with T². Prints the median time of each and the time per
// query-key pair each attends to (W·T, and T²/2 causal): at T = 4W for each window W, then for one
// window at growing T.
//   OMP_NUM_THREADS=2 build/bench/attention/bench_attention [--windows 128,256,512,1024]
//       [--window 256 --lengths 1024,2048,4096,8192] [--reps 5]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "core/rng.hpp"
#include "kernels/cpu/attention.hpp"

namespace {

struct Shape {
  int B, T, NH, NKV, hd;
};

// Median seconds of a forward and a backward over the same inputs.
double median_seconds(const Shape& s, int window, int reps) {
  const size_t qkv = size_t(s.B) * s.T * (s.NH + 2 * s.NKV) * s.hd, out = size_t(s.B) * s.T * s.NH * s.hd;
  std::vector<float> x(qkv), dx(qkv), y(out), dy(out), lse(size_t(s.B) * s.NH * s.T);
  std::vector<float> scratch(zt::cpu::attention_scratch_floats(s.B, s.T, s.NH));
  zt::Rng rng(7);
  for (float& v : x) v = float(rng.uniform()) - 0.5f;
  for (float& v : dy) v = float(rng.uniform()) - 0.5f;
  std::vector<double> times;
  for (int r = 0; r < reps + 1; ++r) {  // the first run warms up
    const auto start = std::chrono::steady_clock::now();
    zt::cpu::gqa_attention_forward(y.data(), lse.data(), scratch.data(), x.data(), s.B, s.T, s.NH, s.NKV, s.hd,
                                   nullptr, window);
    zt::cpu::gqa_attention_backward(dx.data(), scratch.data(), dy.data(), x.data(), y.data(), lse.data(), s.B, s.T,
                                    s.NH, s.NKV, s.hd, nullptr, window);
    if (r > 0) times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

void print_row(const Shape& s, int W, int reps) {
  const double sliding = median_seconds(s, W, reps), full = median_seconds(s, 0, reps);
  const double band = double(W) * s.T, causal = double(s.T) * s.T / 2;
  std::printf("| %d | %d | %.2f | %.2f | %.2f | %.1f | %.1f |\n", W, s.T, sliding * 1e3, full * 1e3, full / sliding,
              sliding * 1e9 / band, full * 1e9 / causal);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"CPU attention time of sliding-window layers beside full ones at T = 4W"};
  std::vector<int> windows{128, 256, 512, 1024}, lengths{1024, 2048, 4096, 8192};
  int window = 256, reps = 5, heads = 8, kv_heads = 2, head_dim = 64;
  app.add_option("--windows", windows, "the windows W (T = 4W each)")->delimiter(',');
  app.add_option("--window", window, "the window of the second table");
  app.add_option("--lengths", lengths, "the sequence lengths T of the second table")->delimiter(',');
  app.add_option("--reps", reps, "timed repetitions (the median is printed)");
  app.add_option("--heads", heads, "query heads");
  app.add_option("--kv-heads", kv_heads, "key/value heads");
  app.add_option("--head-dim", head_dim, "channels per head");
  CLI11_PARSE(app, argc, argv);

  std::printf("B 1, %d query heads over %d key/value heads of %d, forward + backward, median of %d\n", heads, kv_heads,
              head_dim, reps);
  const char* header =
      "| W | T | sliding ms | full ms | full/sliding | sliding ns per W·T | full ns per T²/2 |\n"
      "|---:|---:|---:|---:|---:|---:|---:|\n";
  std::printf("T = 4W:\n%s", header);
  for (int W : windows) print_row({1, 4 * W, heads, kv_heads, head_dim}, W, reps);
  std::printf("\nW = %d:\n%s", window, header);
  for (int T : lengths) print_row({1, T, heads, kv_heads, head_dim}, window, reps);
  return 0;
}
