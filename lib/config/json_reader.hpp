#pragma once
// Reading config JSON the way users write it: comments allowed (// and /* */), duplicate keys
// rejected with the key's JSON path (plain JSON parsers silently keep the last one).
#include <nlohmann/json.hpp>
#include <string>

namespace zt::config {

// Objects and arrays nest at most this deep (a real config needs a handful): deeper text is an
// error before any value is built, since copying and judging a value recurses once per level.
constexpr int kMaxJsonDepth = 100;

// `source` names the text in error messages (a file path, "--model", ...).
nlohmann::json parse_json(const std::string& text, const std::string& source);
nlohmann::json read_json_file(const std::string& path);

}  // namespace zt::config
