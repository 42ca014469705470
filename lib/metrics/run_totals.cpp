#include "metrics/run_totals.hpp"

#include <fstream>
#include <string>

#include "comm/control_channel.hpp"

namespace zt {

namespace {

// VmHWM, the peak resident set size of this process, in bytes (0 where /proc cannot tell).
uint64_t peak_resident_bytes() {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == "VmHWM:") {
      uint64_t kib = 0;
      in >> kib;
      return kib * 1024;
    }
    in.ignore(4096, '\n');
  }
  return 0;
}

}  // namespace

RankPeakMemory rank_peak_memory(const MemStats& s, int rank) {
  RankPeakMemory m;
  m.rank = rank;
  m.params = s.pk(MemSpace::Device, MemCategory::Params);
  m.grads = s.pk(MemSpace::Device, MemCategory::Grads);
  m.optimizer = s.pk(MemSpace::Device, MemCategory::Optimizer);
  // Offloaded state is allocated once and held: the sum of its peaks is its peak.
  for (MemSpace space : {MemSpace::Host, MemSpace::Pinned, MemSpace::File})
    for (MemCategory c : {MemCategory::Params, MemCategory::Grads, MemCategory::Optimizer}) m.offload += s.pk(space, c);
  for (MemCategory c : {MemCategory::Params, MemCategory::Grads, MemCategory::Optimizer})
    m.files += s.pk(MemSpace::File, c);
  m.activations = s.pk(MemCategory::Activations);
  m.buffers = s.pk(MemCategory::Buffers);
  m.cached = s.pk(MemCategory::Cached);
  m.resident = peak_resident_bytes();
  return m;
}

std::vector<RankPeakMemory> gather_memory_peaks(Communicator& comm) {
  return comm.control().gather_all(rank_peak_memory(MemoryLedger::instance().stats(), comm.rank()));
}

void RunTotals::add_step(const StepRecord& step) {
  ++steps_;
  tokens_ += step.tokens;
  row_tokens_ += step.row_tokens;
  flops_ += step.flops;
  loss_ = step.loss;
  aux_loss_ = step.aux_loss;
  expert_load_ = step.expert_load;
  preference_ = step.preference;
  comm_ += step.comm;
  waited_s_ += step.time.reduce_wait + step.time.gather_wait;
}

SummaryRecord RunTotals::summarize(Communicator& comm, bool interrupted, double wall_s,
                                   double peak_flops_per_rank) const {
  SummaryRecord s;
  s.steps = steps_;
  s.interrupted = interrupted;
  s.tokens = tokens_;
  s.row_tokens = row_tokens_;
  s.wall_s = wall_s;
  s.tokens_per_s = wall_s > 0 ? double(tokens_) / wall_s : NAN;
  s.mfu = wall_s > 0 ? flops_ / wall_s / (peak_flops_per_rank * comm.world_size()) : NAN;
  s.loss = loss_;
  s.val_loss = val_loss_;
  s.aux_loss = aux_loss_;
  s.expert_load = expert_load_;
  s.preference = preference_;
  s.val_preference = val_preference_;
  s.memory_peak = gather_memory_peaks(comm);
  s.comm = comm_;
  // What the engine can run behind compute: the gradient reduce-scatters and parameter all-gathers.
  s.comm_in_flight_s = comm_.seconds[size_t(CommOp::ReduceScatter)] + comm_.seconds[size_t(CommOp::AllGather)];
  s.comm_waited_s = waited_s_;
  return s;
}

}  // namespace zt
