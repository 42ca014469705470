#pragma once
// Bytes read from a file, as an error message quotes them, whatever the file (a damaged `latest`,
// a JSON value, a header): the message shows exactly what the file holds, in printable ASCII, and
// never sends a terminal raw bytes. Implemented beside printable() (core/printable.cpp).
#include <cstddef>
#include <string>
#include <string_view>

namespace zt {

// In double quotes, printable ASCII as it is, every other byte escaped (\n, \r, \t, \", \\, \xNN),
// at most `max_bytes` of them, then "..." and the total ("... (4096 bytes)").
std::string quoted_bytes(std::string_view bytes, size_t max_bytes = 64);

// A JSON parser's message about `text` without the bytes it quotes (nlohmann's "last read: '...'"
// holds them raw) and without its "[json.exception...] " prefix, followed by the bytes around
// `offset`, quoted: "syntax error while parsing value - invalid literal; near "tru\xff"".
std::string json_error_near(std::string_view parser_message, std::string_view text, size_t offset);

}  // namespace zt
