#pragma once
// `--set a.b.c=VALUE`: applied to the raw JSON before judging, so an override obeys the same rules
// as the file. VALUE is JSON when it parses as JSON (3, 5e8, true, [0.9,0.95], "auto"), else a string.
#include <nlohmann/json.hpp>
#include <string>

namespace zt::config {

void apply_override(nlohmann::json& raw, const std::string& assignment);

}  // namespace zt::config
