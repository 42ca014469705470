#pragma once
// What the checkpoint tests share: the log captured while a test runs, and the message a call throws.
#include <functional>
#include <memory>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <sstream>
#include <string>

namespace zt::test {

// Messages logged while it lives.
struct CapturedLog {
  std::ostringstream text;
  std::shared_ptr<spdlog::logger> previous = spdlog::default_logger();
  CapturedLog() {
    spdlog::set_default_logger(
        std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::ostream_sink_mt>(text)));
  }
  ~CapturedLog() { spdlog::set_default_logger(previous); }
};

// The message of what `f` throws, or "" when it returns.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace zt::test
