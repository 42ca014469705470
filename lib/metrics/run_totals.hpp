#pragma once
// The totals of a run, gathered step by step, and each rank's memory peaks gathered to rank 0:
// what the summary record at the end says (docs/metrics.md, "summary").
#include <cstdint>
#include <optional>
#include <vector>

#include "comm/communicator.hpp"
#include "core/ledger.hpp"
#include "metrics/records.hpp"

namespace zt {

// This process's peaks: from the ledger's statistics and the operating system.
RankPeakMemory rank_peak_memory(const MemStats& stats, int rank);
// Every rank's peaks, in rank order. A collective: every rank calls it.
std::vector<RankPeakMemory> gather_memory_peaks(Communicator& comm);

class RunTotals {
public:
  void add_step(const StepRecord& step);
  void add_eval(const EvalRecord& eval) {
    val_loss_ = eval.val_loss;
    val_preference_ = eval.preference;
  }

  // The summary of the steps added so far; gathers the memory peaks (every rank calls it). MFU: the
  // steps' FLOPs over the wall time and the world's peak.
  SummaryRecord summarize(Communicator& comm, bool interrupted, double wall_s, double peak_flops_per_rank) const;

private:
  int64_t steps_ = 0, tokens_ = 0, row_tokens_ = 0;
  double flops_ = 0;
  double loss_ = NAN, val_loss_ = NAN;
  std::optional<double> aux_loss_, expert_load_;
  std::optional<PreferenceMetrics> preference_, val_preference_;
  CommStats comm_;
  double waited_s_ = 0;
};

}  // namespace zt
