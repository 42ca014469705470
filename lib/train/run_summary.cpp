#include "train/run_summary.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>

#include "comm/control_channel.hpp"
#include "core/ledger.hpp"
#include "metrics/comms_summary.hpp"

namespace zt {

namespace {

constexpr CommOp kOps[] = {CommOp::AllReduce, CommOp::ReduceScatter, CommOp::AllGather, CommOp::Broadcast,
                           CommOp::Barrier};
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

double mib(double bytes) { return bytes / 1048576.0; }

std::string show_loss(double x) { return std::isfinite(x) ? fmt::format("{:.4f}", x) : "-"; }

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

void RunTotals::add_step(const StepRecord& step, const StepBreakdown& time) {
  ++steps_;
  tokens_ += step.tokens;
  loss_ = step.loss;
  for (size_t i = 0; i < size_t(CommOp::Count); ++i) {
    comm_.bytes_sent[i] += step.comm.bytes_sent[i];
    comm_.calls[i] += step.comm.calls[i];
    comm_.seconds[i] += step.comm.seconds[i];
  }
  waited_s_ += time.reduce_wait + time.gather_wait;
}

SummaryRecord RunTotals::summarize(Communicator& comm, bool interrupted, double wall_s, double flops_per_token,
                                   double peak_flops_per_rank) const {
  SummaryRecord s;
  s.steps = steps_;
  s.interrupted = interrupted;
  s.tokens = tokens_;
  s.wall_s = wall_s;
  s.tokens_per_s = wall_s > 0 ? double(tokens_) / wall_s : NAN;
  s.mfu = flops_per_token * s.tokens_per_s / (peak_flops_per_rank * comm.world_size());
  s.loss = loss_;
  s.val_loss = val_loss_;
  s.memory_peak = gather_memory_peaks(comm);
  s.comm = comm_;
  // What the engine can run behind compute: the gradient reduce-scatters and parameter all-gathers.
  s.comm_in_flight_s = comm_.seconds[size_t(CommOp::ReduceScatter)] + comm_.seconds[size_t(CommOp::AllGather)];
  s.comm_waited_s = waited_s_;
  return s;
}

std::vector<std::string> summary_lines(const SummaryRecord& s, const MemoryPlan& plan, int stage) {
  std::vector<std::string> out;
  const std::string val = std::isfinite(s.val_loss) ? fmt::format(", val loss {:.4f}", s.val_loss) : "";
  out.push_back(fmt::format("done: {} steps in {:.1f} s, final loss {}{}, {:.0f} tokens/s", s.steps, s.wall_s,
                            show_loss(s.loss), val, s.tokens_per_s));
  out.push_back(fmt::format("summary: {} | {} steps | {} tokens | {:.1f} s | {:.0f} tokens/s | MFU {:.1f}%",
                            s.interrupted ? "interrupted (stop requested)" : "complete", s.steps, s.tokens, s.wall_s,
                            s.tokens_per_s, 100.0 * s.mfu));
  out.push_back(fmt::format("  final loss {} (train, last step), {} (val, last evaluation)", show_loss(s.loss),
                            show_loss(s.val_loss)));

  // Peak memory per rank and category, under the plan of this stage (its ZeRO formula).
  std::string head = fmt::format("  {:<28}", "peak memory (MiB)");
  for (const auto& [name, bytes] : RankPeakMemory{}.fields()) head += fmt::format(" {:>11}", name);
  out.push_back(head);
  std::string row = fmt::format("    {:<26}", fmt::format("plan, ZeRO-{}: {}", stage, plan.formula));
  for (double planned : {double(plan.params), double(plan.grads), double(plan.optimizer), double(plan.offload)})
    row += fmt::format(" {:>11.2f}", mib(planned));
  row += fmt::format(" {:>11}", "");
  row += fmt::format(" {:>11.2f}", mib(double(plan.activations)));
  row += fmt::format(" {:>11}", fmt::format("<= {:.2f}", mib(double(plan.buffers_bound))));
  out.push_back(row);
  for (const auto& m : s.memory_peak) {
    row = fmt::format("    {:<26}", fmt::format("rank {}", m.rank));
    for (const auto& [name, bytes] : m.fields()) row += fmt::format(" {:>11.2f}", mib(double(bytes)));
    out.push_back(row);
  }

  // Communication of rank 0, and how much of it ran behind compute.
  out.push_back(fmt::format("  {:<28} {:>8} {:>12} {:>11}", "collectives (rank 0, steps)", "calls", "bytes sent",
                            "time (ms)"));
  bool any = false;
  for (CommOp op : kOps) {
    const size_t i = size_t(op);
    if (s.comm.calls[i] == 0) continue;
    any = true;
    out.push_back(fmt::format("    {:<26} {:>8} {:>12} {:>11.1f}", comm_op_name(op), s.comm.calls[i],
                              show_bytes(double(s.comm.bytes_sent[i])), 1e3 * s.comm.seconds[i]));
  }
  if (!any) out.push_back("    (none)");
  if (s.memory_peak.size() > 1 && s.comm_in_flight_s > 0) {  // one rank sends nothing: no overlap to speak of
    const double hidden = std::clamp(1.0 - s.comm_waited_s / s.comm_in_flight_s, 0.0, 1.0);
    out.push_back(fmt::format("  reduce-scatter and all-gather in flight {:.1f} ms, compute waited {:.1f} ms on them: "
                              "{:.0f}% overlapped with compute",
                              1e3 * s.comm_in_flight_s, 1e3 * s.comm_waited_s, 100.0 * hidden));
  }
  return out;
}

void log_run_summary(const SummaryRecord& s, const MemoryPlan& plan, int stage) {
  for (const auto& line : summary_lines(s, plan, stage)) spdlog::info("{}", line);
}

}  // namespace zt
