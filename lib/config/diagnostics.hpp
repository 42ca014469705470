#pragma once
// How the config system reports what it finds: errors and warnings that start with the config's
// source (file or preset) and the JSON path of the key, e.g.
// "configs/x.json: zero_optimization.stage: 4 is out of range (expected 0..3)".
#include <nlohmann/json.hpp>
#include <string>

namespace zt::config {

struct Diagnostics {
  std::string source;  // file path or preset name; empty for JSON built in code

  std::string message(const std::string& path, const std::string& what) const;
  [[noreturn]] void fail(const std::string& path, const std::string& what) const;  // throws zt::Error
  void warn(const std::string& path, const std::string& what) const;                // spdlog::warn
};

// A JSON value as it appears in messages: compact, numbers without a spurious ".0", long values cut.
std::string show(const nlohmann::json& value);

// "a.b" + "c" -> "a.b.c"; "" + "c" -> "c".
std::string join_path(const std::string& parent, const std::string& key);

}  // namespace zt::config
