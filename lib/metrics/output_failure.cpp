#include "metrics/output_failure.hpp"

#include <spdlog/spdlog.h>

#include <mutex>

namespace zt {

namespace {

std::mutex g_mutex;
std::string g_first;

}  // namespace

void OutputFailure::report(const std::string& message) {
  spdlog::error("{}; the run stops after the current step", message);
  std::lock_guard lock(g_mutex);
  if (g_first.empty()) g_first = message;
}

bool OutputFailure::happened() {
  std::lock_guard lock(g_mutex);
  return !g_first.empty();
}

std::string OutputFailure::message() {
  std::lock_guard lock(g_mutex);
  return g_first;
}

}  // namespace zt
