#include "train/resolved_config_file.hpp"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.hpp"

namespace zt {

std::string resolved_config_path(const config::Config& config) {
  return config.training.metrics.empty() ? "" : config.training.metrics + ".config.json";
}

void write_resolved_config_file(const config::Config& config) {
  const std::string path = resolved_config_path(config);
  if (path.empty()) return;
  auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
  std::ofstream out(path, std::ios::out | std::ios::trunc);
  if (!out) fail("training.metrics: cannot write the resolved config to '{}': {}", path, std::strerror(errno));
  out << config::to_json(config).dump(2) << '\n';
  out.close();
  if (!out) fail("training.metrics: writing the resolved config to '{}' failed: {}", path, std::strerror(errno));
}

void log_resolved_config(const config::Config& config) {
  if (!spdlog::should_log(spdlog::level::debug)) return;  // the JSON is not built for nothing
  spdlog::debug("resolved config ({}):\n{}", config.source, config::to_json(config).dump(2));
}

}  // namespace zt
