#include "metrics/csv_monitor.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/directories.hpp"
#include "core/error.hpp"
#include "metrics/output_failure.hpp"

namespace zt {

namespace {

using namespace monitor_event;

std::string file_name(std::string event) {
  std::replace(event.begin(), event.end(), '/', '_');
  std::replace(event.begin(), event.end(), ' ', '_');
  return event + ".csv";
}

}  // namespace

std::vector<std::string> CsvMonitor::file_names() {
  std::vector<std::string> names;
  for (const char* event : {kTrainLoss, kLr, kLossScale, kForward, kBackward, kStep, kValLoss})
    names.push_back(file_name(event));
  return names;
}

CsvMonitor::CsvMonitor(const config::MonitorConfig& config, const MonitorEvents& events, int64_t samples_per_step)
    : dir_(directory(config)), samples_per_step_(samples_per_step) {
  make_directories("csv_monitor", dir_);
  for (const char* event : {kTrainLoss, kLr}) open(event);
  if (events.loss_scale) open(kLossScale);
  if (events.breakdown)
    for (const char* event : {kForward, kBackward, kStep}) open(event);
  if (events.val_loss) open(kValLoss);
}

void CsvMonitor::open(const std::string& event) {
  // Appending, as DeepSpeed does: a second run adds to the first one's files, never replaces them.
  // The header goes only into a new or empty file (DeepSpeed repeats it on every run, and CSV
  // readers then take it for a row of data).
  CheckedFile file((dir_ / file_name(event)).string(), CheckedFile::Mode::Append, "csv_monitor");
  if (file.size() == 0) file.write("step," + event.substr(event.rfind('/') + 1) + "\n");
  files_.emplace(event, std::move(file));
}

void CsvMonitor::write(const std::string& event, int64_t step, double value) {
  auto it = files_.find(event);
  if (it == files_.end()) return;  // not recorded in this run (or no longer: a write failed)
  // "{}" is the shortest text that reads back as the same double; one write() per row, so a crash keeps it.
  try {
    it->second.write(fmt::format("{},{}\n", step * samples_per_step_, value));
  } catch (const Error& e) {
    give_up(e.what());
  }
}

void CsvMonitor::give_up(const std::string& why) {
  OutputFailure::report(why);
  files_.clear();
}

void CsvMonitor::step(const StepRecord& r) {
  write(kTrainLoss, r.step, r.loss);
  write(kLr, r.step, r.lr);
  write(kLossScale, r.step, r.loss_scale);
  if (r.breakdown) {
    write(kForward, r.step, 1e3 * r.time.forward);
    write(kBackward, r.step, 1e3 * r.time.backward);
    write(kStep, r.step, 1e3 * r.time.step);
  }
}

void CsvMonitor::eval(const EvalRecord& r) { write(kValLoss, r.step, r.val_loss); }

}  // namespace zt
