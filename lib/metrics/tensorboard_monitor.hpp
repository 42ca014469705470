#pragma once
// DeepSpeed's TensorBoard monitor: rank 0 writes one TensorFlow event file into
// <output_path>/<job_name>/ holding the scalars csv_monitor records (metrics/monitor_events.hpp),
// with step = samples seen (step x train_batch_size). Flushed after every step and evaluation, so
// a crash keeps what was written.
#include <cstdint>
#include <filesystem>

#include "config/config.hpp"
#include "metrics/monitor_events.hpp"
#include "metrics/sink.hpp"
#include "metrics/tb_event_writer.hpp"

namespace zt {

class TensorboardMonitor final : public MetricsSink {
public:
  TensorboardMonitor() = default;  // writes nothing (disabled, or ranks other than 0)
  // Creates the directory and opens the event file, so an unwritable path fails at start-up, naming it.
  // Records that cannot be written later (a full disk) are reported to OutputFailure; the monitor
  // then writes nothing more, and the file ends with its last whole record.
  TensorboardMonitor(const config::MonitorConfig& config, const MonitorEvents& events, int64_t samples_per_step);

  void step(const StepRecord& r) override;
  void eval(int64_t step, double val_loss) override;

  // <output_path>/<job_name>; an empty output_path means ./tensorboard.
  static std::filesystem::path directory(const config::MonitorConfig& config);

private:
  void flush();

  MonitorEvents events_;
  int64_t samples_per_step_ = 0;
  TbEventWriter writer_;
};

}  // namespace zt
