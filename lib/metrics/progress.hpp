#pragma once
// The progress line of rank 0: step/total, loss, throughput and time left, kept up to date in place
// between the log lines. Three ways to show it:
//   Terminal  stderr is a terminal: the line is redrawn with a carriage return; a log line first
//             clears it and the line comes back below it, so nothing is garbled.
//   Markers   ZT_PROGRESS=markers (set by scripts/launch.sh when its own stderr is a terminal): the
//             ranks' output reaches the terminal through the launcher, line by line, so rank 0
//             writes each update as a line "<zt-progress> ..." and the launcher draws it in place.
//   Off       anything else (a file, a pipe, ZT_PROGRESS=off, a log level above info): nothing,
//             and never a carriage return.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "metrics/sink.hpp"

namespace zt {

enum class ProgressMode { Off, Terminal, Markers };

// What the console of this process supports (rank 0 only: other ranks pass Off).
ProgressMode console_progress_mode();

inline constexpr const char* kProgressMarker = "<zt-progress> ";
inline constexpr const char* kProgressEndMarker = "<zt-progress-end>";

// "1:02:03" or "2:03".
std::string format_duration(double seconds);

struct ProgressConsole;  // the terminal line and the log sinks that clear it (progress.cpp)

class ProgressLine {
public:
  ProgressLine() = default;  // Off
  ProgressLine(ProgressMode mode, int64_t total_steps);
  ~ProgressLine();
  ProgressLine(ProgressLine&&) noexcept;
  ProgressLine& operator=(ProgressLine&&) noexcept;

  // After each optimizer step of `tokens` tokens. Redrawn at most ten times a second, and always
  // at the first and the last step; the throughput shown is that since the previous drawing.
  void update(int64_t step, double loss, int64_t tokens, double step_tokens_per_s);
  // Removes the line (before the run's summary); the console is as it was before.
  void finish();

  // The text of the line for these numbers (no control characters).
  static std::string text(int64_t step, int64_t total, double loss, double tokens_per_s, double eta_seconds);

private:
  ProgressMode mode_ = ProgressMode::Off;
  int64_t total_ = 0;
  std::shared_ptr<ProgressConsole> console_;
  std::chrono::steady_clock::time_point first_step_end_, last_draw_;
  int64_t first_step_ = 0;
  int64_t tokens_since_draw_ = 0;
};

// The progress line of a run: shown from the set-up on, updated after every step, removed before
// the summary.
class ProgressSink final : public MetricsSink {
public:
  ProgressSink(ProgressMode mode, int64_t total_steps) : mode_(mode), total_(total_steps) {}
  void setup(const SetupRecord&) override { line_ = ProgressLine(mode_, total_); }
  void step(const StepRecord& r) override { line_.update(r.step, r.loss, r.tokens, r.tokens_per_s); }
  void summary(const SummaryRecord&) override { line_.finish(); }

private:
  ProgressMode mode_;
  int64_t total_;
  ProgressLine line_;
};

}  // namespace zt
