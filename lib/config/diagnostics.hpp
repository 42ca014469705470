#pragma once
// How the config system reports what it finds: errors and warnings that start with where the value
// came from (the config's file or preset, or the command-line option that set it) and the JSON path
// of the key, e.g.
// "configs/x.json: zero_optimization.stage: 4 is out of range (expected 0..3)"
// "--set zero_optimization.stage=5: zero_optimization.stage: 5 is out of range (expected 0..3)".
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/json_file.hpp"  // show, join_path

namespace zt::config {

// The JSON paths whose values the command line set (--set, --steps, --data, --model), each with the
// option that set it. A path covers everything below it: `--set zero_optimization={"stage":5}` is
// the origin of zero_optimization.stage too.
class ValueOrigins {
public:
  // `path` and everything below it now come from `origin` (a later option replaces an earlier one).
  void set(const std::string& path, const std::string& origin);
  // A value read under `to` that was given under `from` (an alias or deprecated spelling).
  void alias(const std::string& from, const std::string& to);
  // The origin of the value at `path`: the longest recorded path that is `path` or contains it.
  // nullptr when the value did not come from the command line.
  const std::string* find(const std::string& path) const;

private:
  std::map<std::string, std::string> origins_;
};

// The errors found in one config, so that a user fixes them all in one edit: one message per line,
// the first kShown of them, then how many more there are.
class ErrorList {
public:
  static constexpr size_t kShown = 20;
  void add(const std::string& message) { messages_.push_back(message); }
  size_t size() const { return messages_.size(); }
  // Throws zt::Error holding every message (one per line) when there is any.
  void throw_if_any() const;

private:
  std::vector<std::string> messages_;
};

struct Diagnostics {
  Diagnostics(std::string source = "", std::shared_ptr<ValueOrigins> origins = nullptr,
              std::shared_ptr<ErrorList> errors = nullptr)
      : source(std::move(source)), origins(std::move(origins)), errors(std::move(errors)) {}

  std::string source;  // file path or preset name; empty for JSON built in code
  std::shared_ptr<ValueOrigins> origins;  // values set on the command line; may be null
  std::shared_ptr<ErrorList> errors;      // where reject() collects errors; null: reject() throws

  // Where the value at `path` came from: its command-line option, else `source`.
  const std::string& origin_of(const std::string& path) const;
  std::string message(const std::string& path, const std::string& what) const;
  [[noreturn]] void fail(const std::string& path, const std::string& what) const;  // throws zt::Error
  // A value that cannot be used: added to `errors` (the reader goes on with the key's default), or
  // thrown when there is no list.
  void reject(const std::string& path, const std::string& what) const;
  void warn(const std::string& path, const std::string& what) const;  // spdlog::warn
};


}  // namespace zt::config
