#pragma once
// The end of a run on rank 0's console: the summary record as a short table, each rank's memory
// peaks beside the memory plan of the ZeRO stage (docs/metrics.md, "summary").
#include <string>
#include <vector>

#include "metrics/sink.hpp"
#include "train/memory_plan.hpp"

namespace zt {

// The console table, one string per line.
std::vector<std::string> summary_lines(const SummaryRecord& s, const MemoryPlan& plan, int stage);
void log_run_summary(const SummaryRecord& s, const MemoryPlan& plan, int stage);

class SummaryTable final : public MetricsSink {
public:
  SummaryTable(MemoryPlan plan, int stage) : plan_(std::move(plan)), stage_(stage) {}
  void summary(const SummaryRecord& r) override { log_run_summary(r, plan_, stage_); }

private:
  MemoryPlan plan_;
  int stage_;
};

}  // namespace zt
