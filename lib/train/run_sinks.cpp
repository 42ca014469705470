#include "train/run_sinks.hpp"

#include "metrics/comms_summary.hpp"
#include "metrics/csv_monitor.hpp"
#include "metrics/metrics_file.hpp"
#include "metrics/progress.hpp"
#include "metrics/step_log.hpp"
#include "metrics/tensorboard_monitor.hpp"
#include "train/resolved_config_file.hpp"
#include "train/run_summary.hpp"

namespace zt {

MetricsSinks open_run_sinks(const config::Config& c, int rank, bool resumed, bool evaluates, const MemoryPlan& plan) {
  MetricsSinks sinks;
  if (rank != 0) return sinks;
  if (!c.training.metrics.empty()) sinks.add(std::make_unique<MetricsWriter>(c.training.metrics, resumed));
  write_resolved_config_file(c);
  const MonitorEvents events{c.fp16.enabled, c.wall_clock_breakdown, evaluates};
  if (c.csv_monitor.enabled) sinks.add(std::make_unique<CsvMonitor>(c.csv_monitor, events, c.train_batch_size));
  if (c.tensorboard.enabled)
    sinks.add(std::make_unique<TensorboardMonitor>(c.tensorboard, events, c.train_batch_size));
  const ProgressMode progress = console_progress_mode();
  sinks.add(std::make_unique<ProgressSink>(progress, c.training.steps));
  // Without a progress line in view, the log itself says how the run goes every half minute.
  sinks.add(std::make_unique<StepLog>(c.training.steps, progress == ProgressMode::Off ? kQuietLogSeconds : 0));
  if (c.comms_logger.enabled) sinks.add(std::make_unique<CommsSummary>(c.comms_logger));
  sinks.add(std::make_unique<SummaryTable>(plan, c.zero.stage));
  return sinks;
}

}  // namespace zt
