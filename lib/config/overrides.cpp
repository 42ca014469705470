#include "config/overrides.hpp"

#include <vector>

#include "core/json_file.hpp"
#include "core/error.hpp"

namespace zt::config {

void set_value(nlohmann::json& raw, const std::string& key, nlohmann::json value, const std::string& origin,
               ValueOrigins* origins) {
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    size_t dot = key.find('.', start);
    parts.push_back(key.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  for (const auto& p : parts)
    if (p.empty()) fail("{}: empty component in the key {}", origin, key);
  if (parts.size() > size_t(kMaxJsonDepth))
    fail("{}: the key has {} components (at most {})", origin, parts.size(), kMaxJsonDepth);
  if (!raw.is_object()) fail("{}: the config is not a JSON object", origin);

  nlohmann::json* node = &raw;
  std::string walked;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    walked += (walked.empty() ? "" : ".") + parts[i];
    nlohmann::json& next = (*node)[parts[i]];
    if (next.is_null()) {
      next = nlohmann::json::object();
      if (origins) origins->set(walked, origin);  // the block exists because of this option
    }
    if (!next.is_object()) fail("{}: {} is {} in the config, not an object", origin, walked, next.dump());
    node = &next;
  }
  (*node)[parts.back()] = std::move(value);
  if (origins) origins->set(key, origin);
}

nlohmann::json parse_option_value(const std::string& text, const std::string& origin) {
  auto too_deep = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
    using E = nlohmann::json::parse_event_t;
    if ((event == E::object_start || event == E::array_start) && depth >= kMaxJsonDepth)
      fail("{}: the value nests objects and arrays deeper than {} levels", origin, kMaxJsonDepth);
    return true;
  };
  auto parsed = nlohmann::json::parse(text, too_deep, /*allow_exceptions=*/false, /*ignore_comments=*/false);
  if (parsed.is_discarded()) return text;  // a bare word such as AdamW or a path
  return parsed;
}

void apply_override(nlohmann::json& raw, const std::string& assignment, ValueOrigins* origins) {
  auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    fail("--set {}: expected KEY=VALUE, e.g. --set zero_optimization.stage=3", assignment);
  const std::string origin = "--set " + assignment;
  set_value(raw, assignment.substr(0, eq), parse_option_value(assignment.substr(eq + 1), origin), origin, origins);
}

}  // namespace zt::config
