#include "core/ledger.hpp"

#include "core/error.hpp"

namespace zt {

std::string_view mem_category_name(MemCategory c) {
  switch (c) {
    case MemCategory::Params: return "params";
    case MemCategory::Grads: return "grads";
    case MemCategory::Optimizer: return "optimizer";
    case MemCategory::Activations: return "activations";
    case MemCategory::Buffers: return "buffers";
    case MemCategory::Offload: return "offload";
    case MemCategory::Count: break;
  }
  return "?";
}

void fail_allocation(MemCategory c, size_t bytes) {
  MemStats s = MemoryLedger::instance().stats();
  size_t held = 0;
  for (size_t b : s.current) held += b;
  fail("out of memory: cannot allocate {:.1f} MiB for {} (this rank already holds {:.1f} MiB; "
       "`zerotrain --dry-run` prints the memory plan)",
       double(bytes) / 1048576.0, mem_category_name(c), double(held) / 1048576.0);
}

MemoryLedger& MemoryLedger::instance() {
  static MemoryLedger ledger;
  return ledger;
}

void MemoryLedger::add(MemCategory c, size_t bytes) {
  auto i = size_t(c);
  size_t now = current_[i].fetch_add(bytes) + bytes;
  size_t old = peak_[i].load();
  while (now > old && !peak_[i].compare_exchange_weak(old, now)) {
  }
}

void MemoryLedger::sub(MemCategory c, size_t bytes) { current_[size_t(c)].fetch_sub(bytes); }

MemStats MemoryLedger::stats() const {
  MemStats s;
  for (int i = 0; i < kMemCategories; ++i) {
    s.current[i] = current_[i].load();
    s.peak[i] = peak_[i].load();
  }
  return s;
}

void MemoryLedger::reset_peaks() {
  for (int i = 0; i < kMemCategories; ++i) peak_[i].store(current_[i].load());
}

}  // namespace zt
