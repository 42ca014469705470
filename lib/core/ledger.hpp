#pragma once
// The memory ledger: every large allocation registers its bytes under a category, so the
// program can print what it holds per category beside the ZeRO formulas (DESIGN.md).
#include <array>
#include <atomic>
#include <cstddef>
#include <string_view>

namespace zt {

enum class MemCategory : int { Params, Grads, Optimizer, Activations, Buffers, Offload, Count };
constexpr int kMemCategories = int(MemCategory::Count);
std::string_view mem_category_name(MemCategory c);  // "params", "grads", ...

// Throws zt::Error: an allocation of `bytes` for `c` failed; says what this rank already holds.
[[noreturn]] void fail_allocation(MemCategory c, size_t bytes);

struct MemStats {
  std::array<size_t, kMemCategories> current{};
  std::array<size_t, kMemCategories> peak{};
  size_t cur(MemCategory c) const { return current[size_t(c)]; }
  size_t pk(MemCategory c) const { return peak[size_t(c)]; }
};

class MemoryLedger {
public:
  static MemoryLedger& instance();  // one per process (= one per rank)
  void add(MemCategory c, size_t bytes);
  void sub(MemCategory c, size_t bytes);
  MemStats stats() const;
  void reset_peaks();  // peaks restart from the current values

private:
  std::array<std::atomic<size_t>, kMemCategories> current_{};
  std::array<std::atomic<size_t>, kMemCategories> peak_{};
};

}  // namespace zt
