#include "config/diagnostics.hpp"

#include <spdlog/spdlog.h>

#include <cmath>

#include "core/error.hpp"

namespace zt::config {

std::string Diagnostics::message(const std::string& path, const std::string& what) const {
  std::string m;
  if (!source.empty()) m += source + ": ";
  if (!path.empty()) m += path + ": ";
  return m + what;
}

void Diagnostics::fail(const std::string& path, const std::string& what) const { throw Error(message(path, what)); }

void Diagnostics::warn(const std::string& path, const std::string& what) const {
  spdlog::warn("{}", message(path, what));
}

std::string show(const nlohmann::json& value) {
  std::string s;
  // 5e8 arrives as a float; print integral floats the way users write integers.
  if (value.is_number_float() && std::isfinite(value.get<double>()) &&
      std::floor(value.get<double>()) == value.get<double>() && std::fabs(value.get<double>()) < 1e18)
    s = std::to_string(static_cast<long long>(value.get<double>()));
  else
    s = value.dump();
  constexpr size_t limit = 80;
  if (s.size() > limit) s = s.substr(0, limit - 3) + "...";
  return s;
}

std::string join_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

}  // namespace zt::config
