#pragma once
// Where a key's value came from, for messages and the start line: the config, an option of the
// command line, "auto", or nowhere (its default). Read off the raw JSON after the command line was
// applied to it, and the options that set its values.
#include <nlohmann/json.hpp>
#include <string>

#include "config/diagnostics.hpp"

namespace zt::config {

class ValueSources {
public:
  ValueSources(const nlohmann::json& raw, const ValueOrigins& origins) : raw_(raw), origins_(origins) {}

  // The value at a dotted path ("optimizer.params.lr"); nullptr when absent or null.
  const nlohmann::json* find(const std::string& path) const;
  bool given(const std::string& path) const { return find(path) != nullptr; }
  bool is_auto(const std::string& path) const;
  // How a given value was given: its option ("--set training.lr=5e-4", "--steps 7") or "config";
  // "default" when it was not given.
  std::string how(const std::string& path) const;
  // "KEY (how)".
  std::string described(const std::string& path) const;
  // described(path), or for "auto": "KEY \"auto\" (how) = " and what "auto" took, in words.
  std::string chain(const std::string& path, const std::string& auto_took) const;

private:
  const nlohmann::json& raw_;
  const ValueOrigins& origins_;
};

}  // namespace zt::config
