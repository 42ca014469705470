#include "core/log.hpp"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <filesystem>

#include "core/error.hpp"

namespace zt {

spdlog::level::level_enum parse_log_level(const std::string& name) {
  auto level = spdlog::level::from_str(name);
  if (level == spdlog::level::off && name != "off")
    fail("--log-level {}: expected one of trace, debug, info, warn, error, critical, off", name);
  return level;
}

void init_logging(const LogOptions& o) {
  auto level = parse_log_level(o.level);
  std::vector<spdlog::sink_ptr> sinks;
  // Console is stderr: stdout is reserved for machine-readable output (--print-config).
  auto console = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  console->set_level(o.rank == 0 ? level : std::max(level, spdlog::level::warn));
  sinks.push_back(console);
  if (!o.log_dir.empty()) {
    std::filesystem::create_directories(o.log_dir);
    auto file = std::make_shared<spdlog::sinks::basic_file_sink_mt>(
        fmt::format("{}/rank{}.log", o.log_dir, o.rank), true);
    file->set_level(level);
    sinks.push_back(file);
  }
  auto logger = std::make_shared<spdlog::logger>("zerotrain", sinks.begin(), sinks.end());
  // Time, rank and level on every line, at any world size: "[12:34:56.789][rank 0] info: ...".
  logger->set_pattern(fmt::format("[%H:%M:%S.%e][rank {}] %^%l%$: %v", o.rank));
  logger->set_level(level);
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(logger);
}

}  // namespace zt
