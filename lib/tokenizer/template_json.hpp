#pragma once
// JSON as chat templates write it: transformers' `tojson` filter, which is Python's json.dumps with
// ensure_ascii=False (keys in the order they were read, ", " and ": " between items, floats as
// Python's repr writes them, only the characters JSON must escape escaped) and, for `tojson(indent=N)`,
// one item a line.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace zt {

// indent < 0: on one line.
std::string template_json(const nlohmann::ordered_json& value, int indent = -1);
// A string as a JSON string literal, quoted and escaped.
std::string template_json_string(std::string_view text);

}  // namespace zt
