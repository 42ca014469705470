#pragma once
// Optional time accounting per kernel kind, for benchmarks and profiling runs. Off by default: a
// disabled timer costs one branch. Meant for the calling thread only (kernels are called from one
// thread and parallelise inside), so it is not thread-safe. The clock is the wall clock, or the
// calling thread's CPU time: with one thread, what a kernel costs whatever else shares the machine.
#include <array>
#include <chrono>
#include <ctime>
#include <string_view>

namespace zt::cpu {

// MoeRouting: the moe_* operators (routing, row gathers, the LM head's too, combining), both directions.
enum class KernelKind : int {
  MatmulForward, MatmulBackward,
  AttentionForward, AttentionBackward,
  LayerNormForward, LayerNormBackward,
  GeluForward, GeluBackward,
  CrossEntropyForward, CrossEntropyBackward,
  EmbeddingForward, EmbeddingBackward,
  ResidualForward, ResidualBackward,
  RmsNormForward, RmsNormBackward,
  RopeForward, RopeBackward,
  SwigluForward, SwigluBackward,
  MoeRouting,
  Count
};
constexpr int kKernelKinds = int(KernelKind::Count);
std::string_view kernel_kind_name(KernelKind k);  // "matmul fwd", ...

struct KernelTotals {
  std::array<double, kKernelKinds> seconds{};
  std::array<long, kKernelKinds> calls{};
};

class KernelProfile {
public:
  static void enable(bool on) { enabled_ = on; }
  static bool enabled() { return enabled_; }
  // Time by the calling thread's CPU time instead of the wall clock.
  static void use_thread_cpu_time(bool on) { thread_cpu_time_ = on; }
  // Seconds on the chosen clock from an arbitrary origin.
  static double now() {
    if (!thread_cpu_time_)
      return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
  }
  static void reset() { totals_ = {}; }
  static const KernelTotals& totals() { return totals_; }
  static void add(KernelKind k, double seconds) {
    totals_.seconds[int(k)] += seconds;
    totals_.calls[int(k)] += 1;
  }

private:
  static inline bool enabled_ = false;
  static inline bool thread_cpu_time_ = false;
  static inline KernelTotals totals_{};
};

// Adds the lifetime of the scope to kind k while profiling is enabled.
class KernelTimer {
public:
  explicit KernelTimer(KernelKind k) : kind_(k), on_(KernelProfile::enabled()) {
    if (on_) start_ = KernelProfile::now();
  }
  ~KernelTimer() {
    if (on_) KernelProfile::add(kind_, KernelProfile::now() - start_);
  }
  KernelTimer(const KernelTimer&) = delete;
  KernelTimer& operator=(const KernelTimer&) = delete;

private:
  KernelKind kind_;
  bool on_;
  double start_ = 0;
};

}  // namespace zt::cpu
