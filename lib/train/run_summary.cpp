#include "train/run_summary.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

#include "metrics/comms_summary.hpp"

namespace zt {

namespace {

double mib(double bytes) { return bytes / 1048576.0; }

std::string show_loss(double x) { return std::isfinite(x) ? fmt::format("{:.4f}", x) : "-"; }

}  // namespace

std::vector<std::string> summary_lines(const SummaryRecord& s, const MemoryPlan& plan, int stage) {
  std::vector<std::string> out;
  const std::string val = std::isfinite(s.val_loss) ? fmt::format(", val loss {:.4f}", s.val_loss) : "";
  out.push_back(fmt::format("done: {} steps in {:.1f} s, final loss {}{}, {:.0f} tokens/s", s.steps, s.wall_s,
                            show_loss(s.loss), val, s.tokens_per_s));
  const double efficiency = s.packing_efficiency();
  const std::string packing = s.samples ? fmt::format(" | packing efficiency {:.1f}% ({:.1f}% padding)",
                                                      100.0 * efficiency, 100.0 * (1.0 - efficiency))
                                        : "";
  out.push_back(fmt::format("summary: {} | {} steps | {} tokens | {:.1f} s | {:.0f} tokens/s | MFU {:.1f}%{}",
                            s.interrupted ? "interrupted (stop requested)" : "complete", s.steps, s.tokens, s.wall_s,
                            s.tokens_per_s, 100.0 * s.mfu, packing));
  out.push_back(fmt::format("  final loss {} (train, last step), {} (val, last evaluation)", show_loss(s.loss),
                            show_loss(s.val_loss)));
  if (s.aux_loss || s.expert_load)  // models with experts: the router's balance at the last step
    out.push_back(fmt::format("  experts (last step): aux loss {}, expert load {} (busiest expert's tokens over the "
                              "mean)",
                              s.aux_loss ? show_loss(*s.aux_loss) : "-",
                              s.expert_load ? fmt::format("{:.2f}", *s.expert_load) : "-"));
  auto preference = [&](const std::optional<PreferenceMetrics>& m, const char* which) {
    if (!m) return;
    out.push_back(fmt::format("  preference ({}): rewards accuracies {:.3f}, margins {:.4f}, chosen {:.4f}, "
                              "rejected {:.4f} | logps chosen {:.4f}, rejected {:.4f}{}",
                              which, m->rewards_accuracies, m->rewards_margins, m->rewards_chosen,
                              m->rewards_rejected, m->logps_chosen, m->logps_rejected, odds_ratio_text(*m)));
  };
  preference(s.preference, "train, last step");
  preference(s.val_preference, "val, last evaluation");

  // Peak memory per rank and category, under the plan of this stage (its ZeRO formula).
  std::string head = fmt::format("  {:<28}", "peak memory (MiB)");
  for (const auto& [name, bytes] : RankPeakMemory{}.fields()) head += fmt::format(" {:>11}", name);
  out.push_back(head);
  std::string row = fmt::format("    {:<26}", fmt::format("plan, ZeRO-{}: {}", stage, plan.formula));
  for (double planned : {double(plan.params), double(plan.grads), double(plan.optimizer), double(plan.offload),
                         double(plan.offload_files)})
    row += fmt::format(" {:>11.2f}", mib(planned));
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
  for (CommOp op : kCommOps) {
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
