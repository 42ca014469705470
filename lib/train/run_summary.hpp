#pragma once
// The end of a run (DESIGN.md, "Metrics: the end of a run"): totals gathered step by step, each
// rank's memory peaks gathered to rank 0, written as the metrics file's summary record and shown
// on rank 0's console as a short table beside the memory plan of the ZeRO stage.
#include <cstdint>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "train/memory_plan.hpp"
#include "metrics/metrics_file.hpp"

namespace zt {

// This process's peaks: from the ledger's statistics and the operating system.
RankPeakMemory rank_peak_memory(const MemStats& stats, int rank);
// Every rank's peaks, in rank order. A collective: every rank calls it.
std::vector<RankPeakMemory> gather_memory_peaks(Communicator& comm);

class RunTotals {
public:
  void add_step(const StepRecord& step, const StepBreakdown& time);
  void add_eval(double val_loss) { val_loss_ = val_loss; }

  // The summary of the steps added so far; gathers the memory peaks (every rank calls it).
  SummaryRecord summarize(Communicator& comm, bool interrupted, double wall_s, double flops_per_token,
                          double peak_flops_per_rank) const;

private:
  int64_t steps_ = 0, tokens_ = 0;
  double loss_ = NAN, val_loss_ = NAN;
  CommStats comm_;
  double waited_s_ = 0;
};

// The console table (rank 0), one string per line.
std::vector<std::string> summary_lines(const SummaryRecord& s, const MemoryPlan& plan, int stage);
void log_run_summary(const SummaryRecord& s, const MemoryPlan& plan, int stage);

}  // namespace zt
