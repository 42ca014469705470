#pragma once
// The scalar events DeepSpeed's monitors (csv_monitor, tensorboard) record, by DeepSpeed's names.
// Each is recorded at "samples seen" = step x train_batch_size (DeepSpeed's global_samples).

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

}  // namespace zt
