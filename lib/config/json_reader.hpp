#pragma once
// Reading config JSON the way users write it: comments allowed (// and /* */), duplicate keys
// rejected with the key's JSON path (plain JSON parsers silently keep the last one).
#include <nlohmann/json.hpp>
#include <string>

namespace zt::config {

// `source` names the text in error messages (a file path, "--model", ...).
nlohmann::json parse_json(const std::string& text, const std::string& source);
nlohmann::json read_json_file(const std::string& path);

}  // namespace zt::config
