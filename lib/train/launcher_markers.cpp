#include "train/launcher_markers.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace zt {

std::optional<std::string> restart_problem(const config::Config& config) {
  const char* restarts = std::getenv("ZT_MAX_RESTARTS");
  if (!restarts || std::atoi(restarts) <= 0 || !config.training.checkpoint_dir.empty()) return std::nullopt;
  return fmt::format("launch.sh --max-restarts {} restarts a failed job from its latest checkpoint, and "
                     "training.checkpoint_dir is not set: set it (and training.save_interval), or launch without "
                     "--max-restarts",
                     restarts);
}

void write_launcher_markers(const config::Config& config) {
  if (!std::getenv("ZT_LAUNCH_MARKERS")) return;
  const std::string& dir = config.training.checkpoint_dir;
  std::error_code ec;
  const std::string absolute = dir.empty() ? "" : std::filesystem::absolute(dir, ec).lexically_normal().string();
  std::fprintf(stderr, "<zt-checkpoint-dir> %s\n<zt-comm-timeout> %g\n", ec ? dir.c_str() : absolute.c_str(),
               config.training.comm_timeout);
  std::fflush(stderr);
}

}  // namespace zt
