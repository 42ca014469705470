#pragma once
// Where a run's records go on this rank (docs/architecture.md, "Metrics"): on rank 0 the metrics
// file (training.metrics, with the resolved config beside it), csv_monitor, tensorboard, the
// progress line, the step log, comms_logger and the summary table, in that order; nothing on the
// other ranks.
#include "config/config.hpp"
#include "metrics/sink.hpp"
#include "train/memory_plan.hpp"

namespace zt {

// Opens every output the sinks write, so that a path that cannot be written fails at set-up,
// naming its key (zt::Error). resumed: the run continues a checkpoint's (the metrics file is
// appended to). evaluates: the run has validation data and an eval_interval.
MetricsSinks open_run_sinks(const config::Config& config, int rank, bool resumed, bool evaluates,
                            const MemoryPlan& plan);

}  // namespace zt
