#pragma once
// Reading JSON the way users write it (configs, model blocks, a model directory's config.json):
// comments allowed (// and /* */), duplicate keys rejected with the key's JSON path (plain JSON
// parsers silently keep the last one); and JSON values as messages show them.
#include <nlohmann/json.hpp>
#include <string>

namespace zt {

// Objects and arrays nest at most this deep (a real config needs a handful): deeper text is an
// error before any value is built, since copying and judging a value recurses once per level.
constexpr int kMaxJsonDepth = 100;

// `source` names the text in error messages (a file path, "--model", ...).
nlohmann::json parse_json(const std::string& text, const std::string& source);
nlohmann::json read_json_file(const std::string& path);
// The bytes of a regular file, read without ever blocking on a FIFO. Errors name the file.
std::string read_text_file(const std::string& path);

// A JSON value as it appears in messages: compact, numbers without a spurious ".0", long values cut.
std::string show(const nlohmann::json& value);

// "a.b" + "c" -> "a.b.c"; "" + "c" -> "c".
std::string join_path(const std::string& parent, const std::string& key);

}  // namespace zt
