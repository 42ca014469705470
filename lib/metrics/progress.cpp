#include "metrics/progress.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string_view>
#include <vector>

namespace zt {

namespace {

constexpr double kRedrawSeconds = 0.1;

bool writes_to_stderr(const spdlog::sink_ptr& sink) {
  auto* s = sink.get();
  return dynamic_cast<spdlog::sinks::ansicolor_stderr_sink_mt*>(s) ||
         dynamic_cast<spdlog::sinks::ansicolor_stderr_sink_st*>(s) ||
         dynamic_cast<spdlog::sinks::stderr_sink_mt*>(s) || dynamic_cast<spdlog::sinks::stderr_sink_st*>(s);
}

void write_stderr(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
}

// Columns of the terminal on stderr; 80 when it does not say.
size_t terminal_columns() {
  winsize w{};
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 0) return w.ws_col;
  return 80;
}

std::string compact(double x) {
  if (!std::isfinite(x)) return "-";
  if (x >= 1e6) return fmt::format("{:.2f}M", x / 1e6);
  if (x >= 1e4) return fmt::format("{:.1f}k", x / 1e3);
  return fmt::format("{:.0f}", x);
}

}  // namespace

// The terminal line and the console sinks of the logger, wrapped so that a log line clears the
// progress line first and draws it again below itself.
struct ProgressConsole {
  std::mutex mutex;
  std::string line;  // shown now; empty: nothing shown
  std::shared_ptr<spdlog::logger> logger;
  std::vector<std::pair<size_t, spdlog::sink_ptr>> originals;  // index in logger->sinks(), the sink

  void clear_locked() {
    if (!line.empty()) write_stderr("\r\033[K");
  }
  void draw_locked() {
    if (!line.empty()) write_stderr("\r" + line + "\033[K");
  }
};

namespace {

class ClearingSink : public spdlog::sinks::sink {
public:
  ClearingSink(spdlog::sink_ptr inner, std::shared_ptr<ProgressConsole> console)
      : inner_(std::move(inner)), console_(std::move(console)) {
    set_level(inner_->level());
  }
  void log(const spdlog::details::log_msg& msg) override {
    std::lock_guard lock(console_->mutex);
    console_->clear_locked();
    inner_->log(msg);
    inner_->flush();
    console_->draw_locked();
  }
  void flush() override { inner_->flush(); }
  void set_pattern(const std::string& pattern) override { inner_->set_pattern(pattern); }
  void set_formatter(std::unique_ptr<spdlog::formatter> formatter) override {
    inner_->set_formatter(std::move(formatter));
  }

private:
  spdlog::sink_ptr inner_;
  std::shared_ptr<ProgressConsole> console_;
};

}  // namespace

ProgressMode console_progress_mode() {
  if (spdlog::default_logger()->level() > spdlog::level::info) return ProgressMode::Off;
  const char* env = std::getenv("ZT_PROGRESS");
  const std::string_view setting = env ? env : "";
  if (setting == "off") return ProgressMode::Off;
  if (setting == "markers") return ProgressMode::Markers;
  return isatty(STDERR_FILENO) ? ProgressMode::Terminal : ProgressMode::Off;
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--";
  const auto s = int64_t(std::llround(seconds));
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

std::string ProgressLine::text(int64_t step, int64_t total, double loss, double tokens_per_s, double eta_seconds) {
  const double percent = total > 0 ? 100.0 * double(step) / double(total) : 0.0;
  return fmt::format("step {}/{} {:3.0f}% | loss {:.4f} | {} tok/s | ETA {}", step, total, percent, loss,
                     compact(tokens_per_s), format_duration(eta_seconds));
}

ProgressLine::ProgressLine(ProgressMode mode, int64_t total_steps) : mode_(mode), total_(total_steps) {
  if (mode_ != ProgressMode::Terminal) return;
  console_ = std::make_shared<ProgressConsole>();
  console_->logger = spdlog::default_logger();
  auto& sinks = console_->logger->sinks();
  for (size_t i = 0; i < sinks.size(); ++i)
    if (writes_to_stderr(sinks[i])) {
      console_->originals.emplace_back(i, sinks[i]);
      sinks[i] = std::make_shared<ClearingSink>(sinks[i], console_);
    }
}

ProgressLine::~ProgressLine() { finish(); }

ProgressLine::ProgressLine(ProgressLine&& other) noexcept { *this = std::move(other); }

ProgressLine& ProgressLine::operator=(ProgressLine&& other) noexcept {
  if (this != &other) {
    finish();
    mode_ = other.mode_;
    total_ = other.total_;
    console_ = std::move(other.console_);
    first_step_end_ = other.first_step_end_;
    last_draw_ = other.last_draw_;
    first_step_ = other.first_step_;
    tokens_since_draw_ = other.tokens_since_draw_;
    other.mode_ = ProgressMode::Off;
  }
  return *this;
}

void ProgressLine::update(int64_t step, double loss, int64_t tokens, double step_tokens_per_s) {
  if (mode_ == ProgressMode::Off) return;
  const auto now = std::chrono::steady_clock::now();
  double tokens_per_s = step_tokens_per_s;
  if (first_step_ == 0) {  // the first step also pays for warm-up: the time left counts from its end
    first_step_ = step;
    first_step_end_ = now;
  } else {
    tokens_since_draw_ += tokens;
    const double since_draw = std::chrono::duration<double>(now - last_draw_).count();
    if (step < total_ && since_draw < kRedrawSeconds) return;
    tokens_per_s = double(tokens_since_draw_) / since_draw;  // steady, unlike one step's
  }
  tokens_since_draw_ = 0;
  last_draw_ = now;
  double eta = NAN;
  if (step > first_step_)
    eta = std::chrono::duration<double>(now - first_step_end_).count() / double(step - first_step_) *
          double(total_ - step);
  std::string line = text(step, total_, loss, tokens_per_s, eta);
  if (mode_ == ProgressMode::Markers) {
    write_stderr(kProgressMarker + line + "\n");
    return;
  }
  const size_t columns = terminal_columns();
  if (line.size() >= columns) line.resize(columns - 1);  // a wrapped line could not be redrawn in place
  std::lock_guard lock(console_->mutex);
  console_->line = std::move(line);
  console_->draw_locked();
}

void ProgressLine::finish() {
  if (mode_ == ProgressMode::Markers) write_stderr(std::string(kProgressEndMarker) + "\n");
  if (mode_ == ProgressMode::Terminal && console_) {
    std::lock_guard lock(console_->mutex);
    console_->clear_locked();
    console_->line.clear();
    auto& sinks = console_->logger->sinks();
    for (auto& [i, sink] : console_->originals)
      if (i < sinks.size()) sinks[i] = sink;
    console_->originals.clear();
  }
  mode_ = ProgressMode::Off;
}

}  // namespace zt
