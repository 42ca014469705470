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
    case MemCategory::Cached: return "cached";
    case MemCategory::Count: break;
  }
  return "?";
}

size_t MemStats::offloaded() const {
  size_t bytes = 0;
  for (MemSpace s : {MemSpace::Host, MemSpace::Pinned, MemSpace::File})
    for (MemCategory c : {MemCategory::Params, MemCategory::Grads, MemCategory::Optimizer}) bytes += cur(s, c);
  return bytes;
}

void fail_allocation(MemCategory c, size_t bytes, MemSpace space) {
  const MemoryLedger& ledger = MemoryLedger::instance();
  MemStats s = ledger.stats();
  size_t held = 0;
  for (size_t b : s.current) held += b;
  const auto mib = [](size_t b) { return double(b) / 1048576.0; };
  std::string where = space == MemSpace::Device ? "" : fmt::format(" in {} memory", mem_space_name(space));
  std::string limit;
  if (ledger.limit(space) > 0 && ledger.held(space) + bytes > ledger.limit(space))
    limit = fmt::format(", {:.1f} MiB of them in {} memory, whose limit is {:.1f} MiB ({})", mib(ledger.held(space)),
                        mem_space_name(space), mib(ledger.limit(space)), ledger.limit_source(space));
  fail("out of memory: cannot allocate {:.1f} MiB for {}{} (this rank already holds {:.1f} MiB{}; "
       "`zerotrain --dry-run` prints the memory plan)",
       mib(bytes), mem_category_name(c), where, mib(held), limit);
}

void* allocate_counted(Device& device, MemSpace space, MemCategory category, size_t bytes, bool zeroed) {
  MemoryLedger& ledger = MemoryLedger::instance();
  const size_t limit = ledger.limit(space);
  if (limit > 0 && (bytes > limit || ledger.held(space) > limit - bytes)) fail_allocation(category, bytes, space);
  void* data = device.allocate(space, bytes, zeroed);
  if (!data) fail_allocation(category, bytes, space);
  ledger.add(space, category, bytes);
  return data;
}

MemoryLedger& MemoryLedger::instance() {
  static MemoryLedger ledger;
  return ledger;
}

void MemoryLedger::raise(std::atomic<size_t>& peak, size_t now) {
  size_t old = peak.load();
  while (now > old && !peak.compare_exchange_weak(old, now)) {
  }
}

void MemoryLedger::add(MemSpace s, MemCategory c, size_t bytes) {
  auto i = size_t(s), j = size_t(c);
  raise(peak_[i][j], current_[i][j].fetch_add(bytes) + bytes);
  raise(total_peak_[j], total_[j].fetch_add(bytes) + bytes);
  allocations_.fetch_add(1);
}

void MemoryLedger::sub(MemSpace s, MemCategory c, size_t bytes) {
  current_[size_t(s)][size_t(c)].fetch_sub(bytes);
  total_[size_t(c)].fetch_sub(bytes);
}

void MemoryLedger::move(MemSpace s, MemCategory from, MemCategory to, size_t bytes) {
  const auto i = size_t(s), j = size_t(to);
  raise(peak_[i][j], current_[i][j].fetch_add(bytes) + bytes);
  raise(total_peak_[j], total_[j].fetch_add(bytes) + bytes);
  sub(s, from, bytes);
}

MemStats MemoryLedger::stats() const {
  MemStats s;
  for (int i = 0; i < kMemSpaces; ++i)
    for (int j = 0; j < kMemCategories; ++j) {
      s.current_by_space[i][j] = current_[i][j].load();
      s.peak_by_space[i][j] = peak_[i][j].load();
    }
  for (int j = 0; j < kMemCategories; ++j) {
    s.current[j] = total_[j].load();
    s.peak[j] = total_peak_[j].load();
  }
  s.allocations = allocations_.load();
  return s;
}

void MemoryLedger::set_limit(MemSpace s, size_t bytes, std::string source) {
  limit_[size_t(s)] = bytes;
  limit_source_[size_t(s)] = std::move(source);
}

size_t MemoryLedger::held(MemSpace s) const {
  size_t bytes = 0;
  for (const auto& c : current_[size_t(s)]) bytes += c.load();
  return bytes;
}

void MemoryLedger::reset_peaks() {
  for (int i = 0; i < kMemSpaces; ++i)
    for (int j = 0; j < kMemCategories; ++j) peak_[i][j].store(current_[i][j].load());
  for (int j = 0; j < kMemCategories; ++j) total_peak_[j].store(total_[j].load());
}

}  // namespace zt
