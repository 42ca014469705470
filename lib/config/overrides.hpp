#pragma once
// `--set a.b.c=VALUE`: applied to the raw JSON before judging, so an override obeys the same rules
// as the file. VALUE is JSON when it parses as JSON (3, 5e8, true, [0.9,0.95], "auto"), else a string.
// With `origins`, the key (and any block the override creates) is recorded as set by
// "--set KEY=VALUE", so that a bad value is reported against the option rather than the file.
#include <nlohmann/json.hpp>
#include <string>

#include "config/diagnostics.hpp"

namespace zt::config {

void apply_override(nlohmann::json& raw, const std::string& assignment, ValueOrigins* origins = nullptr);

// Sets the value at the dotted `key`, making the blocks on the way; `origin` is the option that set
// it ("--learning_rate 2e-5"), named in errors and recorded in `origins`.
void set_value(nlohmann::json& raw, const std::string& key, nlohmann::json value, const std::string& origin,
               ValueOrigins* origins);
// An option's value text as --set reads it: JSON when it parses, else the string.
nlohmann::json parse_option_value(const std::string& text, const std::string& origin);

}  // namespace zt::config
