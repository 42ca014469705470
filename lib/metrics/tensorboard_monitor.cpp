#include "metrics/tensorboard_monitor.hpp"

#include "core/directories.hpp"
#include "core/error.hpp"
#include "metrics/output_failure.hpp"

namespace zt {

using namespace monitor_event;

TensorboardMonitor::TensorboardMonitor(const config::MonitorConfig& config, const MonitorEvents& events,
                                       int64_t samples_per_step)
    : events_(events), samples_per_step_(samples_per_step) {
  const auto dir = directory(config);
  make_directories("tensorboard", dir);
  writer_ = TbEventWriter(dir);
}

void TensorboardMonitor::step(const StepRecord& r) {
  const int64_t samples = r.step * samples_per_step_;
  writer_.scalar(kTrainLoss, samples, float(r.loss));
  writer_.scalar(kLr, samples, float(r.lr));
  if (events_.loss_scale) writer_.scalar(kLossScale, samples, float(r.loss_scale));
  if (events_.breakdown) {
    writer_.scalar(kForward, samples, float(1e3 * r.time.forward));
    writer_.scalar(kBackward, samples, float(1e3 * r.time.backward));
    writer_.scalar(kStep, samples, float(1e3 * r.time.step));
  }
  flush();
}

void TensorboardMonitor::eval(const EvalRecord& r) {
  if (!events_.val_loss) return;
  writer_.scalar(kValLoss, r.step * samples_per_step_, float(r.val_loss));
  flush();
}

void TensorboardMonitor::flush() {
  try {
    writer_.flush();
  } catch (const Error& e) {
    OutputFailure::report(e.what());
    writer_.close();
  }
}

}  // namespace zt
