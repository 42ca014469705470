#pragma once
// What DeepSpeed's monitors (csv_monitor, tensorboard) share: the scalar events they record, by
// DeepSpeed's names, each at "samples seen" = step x train_batch_size (DeepSpeed's
// global_samples), and where they write. Both create their directory and open their files when
// made, so an unwritable path fails at start-up, naming it; a write that fails later (a full
// disk) is reported to OutputFailure, and the monitor writes nothing more, its files ending with
// their last whole record.
#include <filesystem>

#include "config/config.hpp"

namespace zt {

namespace monitor_event {
inline constexpr const char* kTrainLoss = "Train/Samples/train_loss";
inline constexpr const char* kLr = "Train/Samples/lr";
inline constexpr const char* kLossScale = "Train/Samples/loss_scale";
inline constexpr const char* kForward = "Train/Samples/elapsed_time_ms_forward";
inline constexpr const char* kBackward = "Train/Samples/elapsed_time_ms_backward";
inline constexpr const char* kStep = "Train/Samples/elapsed_time_ms_step";
inline constexpr const char* kValLoss = "Train/Samples/val_loss";
}  // namespace monitor_event

// The events a run will record, besides train_loss and lr which every run records.
struct MonitorEvents {
  bool loss_scale = false;  // fp16 only, as in DeepSpeed
  bool breakdown = false;   // wall_clock_breakdown: forward, backward and step times
  bool val_loss = false;    // the run evaluates
};

// <output_path>/<job_name>; an empty output_path means ./<default_dir>. DeepSpeed means
// ~/<default_dir>/<job id>/logs/<job_name> for a missing path (its default "" in fact lands in
// ./<job_name>): a run's files stay beside the run, out of the home directory, and out of the way
// of other directories in the working directory.
inline std::filesystem::path monitor_directory(const config::MonitorConfig& config, const char* default_dir) {
  const std::filesystem::path base = config.output_path.empty() ? default_dir : config.output_path;
  return base / config.job_name;
}

}  // namespace zt
