#pragma once
// Optional wall-clock accounting per kernel kind, for benchmarks and profiling runs. Off by
// default: a disabled timer costs one branch. Meant for the calling thread only (kernels are
// called from one thread and parallelise inside), so it is not thread-safe.
#include <array>
#include <chrono>
#include <string_view>

namespace zt::cpu {

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
  static void reset() { totals_ = {}; }
  static const KernelTotals& totals() { return totals_; }
  static void add(KernelKind k, double seconds) {
    totals_.seconds[int(k)] += seconds;
    totals_.calls[int(k)] += 1;
  }

private:
  static inline bool enabled_ = false;
  static inline KernelTotals totals_{};
};

// Adds the lifetime of the scope to kind k while profiling is enabled.
class KernelTimer {
public:
  explicit KernelTimer(KernelKind k) : kind_(k), on_(KernelProfile::enabled()) {
    if (on_) start_ = std::chrono::steady_clock::now();
  }
  ~KernelTimer() {
    if (on_)
      KernelProfile::add(kind_, std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
  }
  KernelTimer(const KernelTimer&) = delete;
  KernelTimer& operator=(const KernelTimer&) = delete;

private:
  KernelKind kind_;
  bool on_;
  std::chrono::steady_clock::time_point start_{};
};

}  // namespace zt::cpu
