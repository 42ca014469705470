#pragma once
// DeepSpeed's csv_monitor: rank 0 writes one CSV file per event (metrics/monitor_events.hpp) into
// <output_path>/<job_name>/, named after the event with '/' and ' ' made '_'
// ("Train/Samples/train_loss" -> Train_Samples_train_loss.csv). Each file starts with
// "step,<last part of the event name>" and holds one "samples,value" row per record.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/checked_file.hpp"
#include "metrics/monitor_events.hpp"
#include "metrics/sink.hpp"

namespace zt {

class CsvMonitor final : public MetricsSink {
public:
  CsvMonitor(const config::MonitorConfig& config, const MonitorEvents& events, int64_t samples_per_step);

  void step(const StepRecord& r) override;
  void eval(const EvalRecord& r) override;

  static std::filesystem::path directory(const config::MonitorConfig& config) {
    return monitor_directory(config, "csv_monitor");
  }
  // The names of the files it may write there, one per event.
  static std::vector<std::string> file_names();

private:
  void open(const std::string& event);
  void write(const std::string& event, int64_t step, double value);
  void give_up(const std::string& why);

  std::filesystem::path dir_;
  int64_t samples_per_step_ = 0;
  std::map<std::string, CheckedFile> files_;  // by event name
};

}  // namespace zt
