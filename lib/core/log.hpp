#pragma once
// Rank-aware logging over spdlog: rank 0 writes to the console (stderr), every rank to its own
// file when a log directory is given. Every line carries the time, the rank (also with one rank)
// and the level: "[12:34:56.789][rank 0] info: ...". Use spdlog::info/warn/... after init_logging.
#include <spdlog/spdlog.h>

#include <string>

namespace zt {

struct LogOptions {
  int rank = 0;
  std::string level = "info";  // trace|debug|info|warn|error|critical|off
  std::string log_dir;         // empty: no per-rank files
};

void init_logging(const LogOptions& options);
spdlog::level::level_enum parse_log_level(const std::string& name);  // throws zt::Error

}  // namespace zt
