#pragma once
// DeepSpeed's TensorBoard monitor: rank 0 writes one TensorFlow event file into
// <output_path>/<job_name>/ holding the scalars csv_monitor records (metrics/monitor_events.hpp),
// with step = samples seen, flushed after every step and evaluation.
#include <cstdint>
#include <filesystem>

#include "metrics/monitor_events.hpp"
#include "metrics/sink.hpp"
#include "metrics/tb_event_writer.hpp"

namespace zt {

class TensorboardMonitor final : public MetricsSink {
public:
  TensorboardMonitor(const config::MonitorConfig& config, const MonitorEvents& events, int64_t samples_per_step);

  void step(const StepRecord& r) override;
  void eval(const EvalRecord& r) override;

  static std::filesystem::path directory(const config::MonitorConfig& config) {
    return monitor_directory(config, "tensorboard");
  }

private:
  void flush();

  MonitorEvents events_;
  int64_t samples_per_step_ = 0;
  TbEventWriter writer_;
};

}  // namespace zt
