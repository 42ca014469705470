#pragma once
// The memory ledger: every large allocation registers its bytes under (space, category), so the
// program can print what it holds per category beside the ZeRO formulas (docs/architecture.md,
// "Partitioning") and say where it lives: "offload" is optimizer state or parameters held in host
// memory or files, not a label.
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/device.hpp"

namespace zt {

// Buffers: transient buffers in use (buckets, gathered groups, working copies). Cached: buffers
// kept for reuse by the next step while nothing uses them (allocated, but not in use).
enum class MemCategory : int { Params, Grads, Optimizer, Activations, Buffers, Cached, Count };
constexpr int kMemCategories = int(MemCategory::Count);
std::string_view mem_category_name(MemCategory c);  // "params", "grads", ...

// Throws zt::Error: an allocation of `bytes` for `c` in `space` failed; says what this rank
// already holds, and the space's limit when one was set.
[[noreturn]] void fail_allocation(MemCategory c, size_t bytes, MemSpace space = MemSpace::Device);

// Allocates `bytes` through `device` and registers them under (space, category); fails (above)
// when the device has no room or the space's limit would be passed.
void* allocate_counted(Device& device, MemSpace space, MemCategory category, size_t bytes, bool zeroed);

struct MemStats {
  using Table = std::array<std::array<size_t, kMemCategories>, kMemSpaces>;
  Table current_by_space{}, peak_by_space{};
  std::array<size_t, kMemCategories> current{};  // all spaces together
  std::array<size_t, kMemCategories> peak{};     // peak of the all-spaces total
  uint64_t allocations = 0;                      // buffers allocated since the process started

  size_t cur(MemCategory c) const { return current[size_t(c)]; }
  size_t pk(MemCategory c) const { return peak[size_t(c)]; }
  size_t cur(MemSpace s, MemCategory c) const { return current_by_space[size_t(s)][size_t(c)]; }
  size_t pk(MemSpace s, MemCategory c) const { return peak_by_space[size_t(s)][size_t(c)]; }
  // Model states (params, grads, optimizer) held outside device memory: host, pinned and file.
  size_t offloaded() const;
};

class MemoryLedger {
public:
  static MemoryLedger& instance();  // one per process (= one per rank)
  void add(MemSpace s, MemCategory c, size_t bytes);  // an allocation
  void sub(MemSpace s, MemCategory c, size_t bytes);
  void move(MemSpace s, MemCategory from, MemCategory to, size_t bytes);  // the same bytes, another use
  MemStats stats() const;
  void reset_peaks();  // peaks restart from the current values

  // The most bytes allocate_counted lets this process hold in a space (0: no limit), e.g. to keep a
  // run inside part of a GPU; `source` names who set it, for the error message.
  void set_limit(MemSpace s, size_t bytes, std::string source);
  size_t limit(MemSpace s) const { return limit_[size_t(s)]; }
  const std::string& limit_source(MemSpace s) const { return limit_source_[size_t(s)]; }
  size_t held(MemSpace s) const;  // all categories

private:
  static void raise(std::atomic<size_t>& peak, size_t now);
  std::array<std::array<std::atomic<size_t>, kMemCategories>, kMemSpaces> current_{}, peak_{};
  std::array<std::atomic<size_t>, kMemCategories> total_{}, total_peak_{};
  std::atomic<uint64_t> allocations_{0};
  std::array<size_t, kMemSpaces> limit_{};
  std::array<std::string, kMemSpaces> limit_source_{};
};

}  // namespace zt
