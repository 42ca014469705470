#pragma once
// Helpers for the config tests: resolve JSON written in the test, catch the error message, and
// capture spdlog warnings with a test sink.
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <catch2/catch.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "core/error.hpp"

namespace zt::config::testing {

using nlohmann::json;

inline const char* const kSource = "test.json";

inline ResolveOptions world(int n) {
  ResolveOptions o;
  o.world_size = n;
  return o;
}

inline Config resolve(const json& raw, const ResolveOptions& options = world(1)) {
  return resolve_config(raw, options, kSource);
}

// The message of the zt::Error that resolving `raw` throws; fails the test when nothing is thrown.
inline std::string error_of(const json& raw, const ResolveOptions& options = world(1)) {
  try {
    resolve(raw, options);
  } catch (const zt::Error& e) {
    return e.what();
  }
  FAIL("expected a zt::Error for " << raw.dump());
  return "";
}

// A minimal valid config plus the given keys (batch size from the training block).
inline json with(const json& extra) {
  json raw = {{"train_micro_batch_size_per_gpu", "auto"}};
  if (!extra.is_null()) raw.merge_patch(extra);  // with({}) passes null
  return raw;
}

// Replaces the default logger while alive; every message logged is kept as "level: text".
class CapturedLog {
public:
  CapturedLog() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(stream_);
    sink->set_pattern("%l: %v");
    auto logger = std::make_shared<spdlog::logger>("test", sink);
    logger->set_level(spdlog::level::trace);
    spdlog::set_default_logger(logger);
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }
  CapturedLog(const CapturedLog&) = delete;
  CapturedLog& operator=(const CapturedLog&) = delete;

  std::vector<std::string> warnings() const {
    std::vector<std::string> out;
    std::istringstream lines(stream_.str());
    for (std::string line; std::getline(lines, line);)
      if (line.rfind("warning: ", 0) == 0) out.push_back(line.substr(9));
    return out;
  }
  // Warnings that contain `text`.
  size_t count(const std::string& text) const {
    size_t n = 0;
    for (const auto& w : warnings()) n += w.find(text) != std::string::npos;
    return n;
  }

private:
  std::ostringstream stream_;
  std::shared_ptr<spdlog::logger> previous_;
};

}  // namespace zt::config::testing
