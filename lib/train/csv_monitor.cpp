#include "train/csv_monitor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <system_error>

#include "core/error.hpp"

namespace zt {

namespace {

using namespace monitor_event;

std::string file_name(std::string event) {
  std::replace(event.begin(), event.end(), '/', '_');
  std::replace(event.begin(), event.end(), ' ', '_');
  return event + ".csv";
}

}  // namespace

std::filesystem::path CsvMonitor::directory(const config::MonitorConfig& config) {
  // DeepSpeed means ~/csv_monitor/<job id>/logs/<job_name> for a missing path (its default "" in
  // fact lands in ./<job_name>). ./csv_monitor keeps a run's files beside the run, out of the
  // home directory, and out of the way of other directories in the working directory.
  std::filesystem::path base = config.output_path.empty() ? "csv_monitor" : config.output_path;
  return base / config.job_name;
}

CsvMonitor::CsvMonitor(const config::MonitorConfig& config, const MonitorEvents& events, int64_t samples_per_step)
    : dir_(directory(config)), samples_per_step_(samples_per_step) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) fail("csv_monitor: cannot create directory '{}': {}", dir_.string(), ec.message());
  for (const char* event : {kTrainLoss, kLr}) open(event);
  if (events.loss_scale) open(kLossScale);
  if (events.breakdown)
    for (const char* event : {kForward, kBackward, kStep}) open(event);
  if (events.val_loss) open(kValLoss);
}

void CsvMonitor::open(const std::string& event) {
  const auto path = dir_ / file_name(event);
  // Appending, as DeepSpeed does: a second run adds to the first one's files, never replaces them.
  // The header goes only into a new or empty file (DeepSpeed repeats it on every run, and CSV
  // readers then take it for a row of data).
  std::ofstream out(path, std::ios::out | std::ios::app);
  if (!out) fail("csv_monitor: cannot open '{}' for writing", path.string());
  std::error_code ec;
  if (std::filesystem::file_size(path, ec) == 0 || ec)
    out << "step," << event.substr(event.rfind('/') + 1) << '\n' << std::flush;
  files_.emplace(event, std::move(out));
}

void CsvMonitor::write(const std::string& event, int64_t step, double value) {
  auto it = files_.find(event);
  if (it == files_.end()) return;  // not recorded in this run
  // "{}" is the shortest text that reads back as the same double; flushed so a crash keeps it.
  it->second << step * samples_per_step_ << ',' << fmt::format("{}", value) << '\n' << std::flush;
}

void CsvMonitor::step(const StepRecord& r) {
  write(kTrainLoss, r.step, r.loss);
  write(kLr, r.step, r.lr);
  write(kLossScale, r.step, r.loss_scale);
  if (r.time) {
    write(kForward, r.step, 1e3 * r.time->forward);
    write(kBackward, r.step, 1e3 * r.time->backward);
    write(kStep, r.step, 1e3 * r.time->step);
  }
}

void CsvMonitor::eval(int64_t step, double val_loss) { write(kValLoss, step, val_loss); }

}  // namespace zt
