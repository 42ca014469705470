#include "metrics/records.hpp"

#include <fmt/format.h>

#include "comm/control_channel.hpp"
#include "core/ledger.hpp"

namespace zt {

std::vector<RankMemory> gather_setup_memory(Communicator& comm) {
  const auto s = MemoryLedger::instance().stats();
  auto device = [&](MemCategory c) { return uint64_t(s.cur(MemSpace::Device, c)); };
  struct Held {
    uint64_t params, grads, optimizer, buffers, offload;
  };
  const Held mine{device(MemCategory::Params), device(MemCategory::Grads), device(MemCategory::Optimizer),
                  uint64_t(s.cur(MemCategory::Buffers)), uint64_t(s.offloaded())};
  const std::vector<Held> all = comm.control().gather_all(mine);
  std::vector<RankMemory> memory;
  for (int k = 0; k < comm.world_size(); ++k) {
    const Held& m = all[size_t(k)];
    memory.push_back({k, m.params, m.grads, m.optimizer, m.buffers, m.offload});
  }
  return memory;
}

std::string odds_ratio_text(const PreferenceMetrics& m) {
  if (!m.odds_ratio) return "";
  return fmt::format(" | nll_loss {:.4f}, log_odds_ratio {:.4f}, log_odds_chosen {:.4f}", m.odds_ratio->nll_loss,
                     m.odds_ratio->log_odds_ratio, m.odds_ratio->log_odds_chosen);
}

}  // namespace zt
