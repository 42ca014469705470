#include "core/printable.hpp"
#include "core/quoted_bytes.hpp"

#include <fmt/format.h>

namespace zt {

namespace {

// The length of the valid UTF-8 sequence at text[i] (1 to 4), or 0 if none starts there.
size_t utf8_sequence_length(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // the range of the second byte
  if (lead >= 0xc2 && lead <= 0xdf) n = 2;
  else if (lead >= 0xe0 && lead <= 0xef) {
    n = 3;
    if (lead == 0xe0) lo = 0xa0;  // overlong
    if (lead == 0xed) hi = 0x9f;  // surrogates
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    n = 4;
    if (lead == 0xf0) lo = 0x90;  // overlong
    if (lead == 0xf4) hi = 0x8f;  // above U+10FFFF
  }
  if (n == 0 || i + n > text.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xbf) return 0;
  return n;
}

void append_escaped(std::string& out, unsigned char c) {
  switch (c) {
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    default: out += fmt::format("\\x{:02x}", c);
  }
}

}  // namespace

// Control characters and bytes that are not valid UTF-8 are escaped: a message never sends the
// terminal a broken sequence.
std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out.push_back(char(c));
      ++i;
    } else if (const size_t n = c >= 0x80 ? utf8_sequence_length(text, i) : 0) {
      out.append(text.substr(i, n));
      i += n;
    } else {
      append_escaped(out, c);
      ++i;
    }
  }
  return out;
}

std::string quoted_bytes(std::string_view bytes, size_t max_bytes) {
  std::string out = "\"";
  const size_t shown = bytes.size() < max_bytes ? bytes.size() : max_bytes;
  for (size_t i = 0; i < shown; ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(char(c));
    } else if (c >= 0x20 && c < 0x7f) {
      out.push_back(char(c));
    } else {
      append_escaped(out, c);
    }
  }
  out += "\"";
  if (shown < bytes.size()) out += fmt::format("... ({} bytes)", bytes.size());
  return out;
}

std::string json_error_near(std::string_view message, std::string_view text, size_t offset) {
  if (message.starts_with("[json.exception.")) {
    const size_t end = message.find("] ");
    if (end != std::string_view::npos) message.remove_prefix(end + 2);
  }
  const size_t last_read = message.find("; last read: ");
  if (last_read != std::string_view::npos) message = message.substr(0, last_read);
  // nlohmann counts the byte it stopped at from 1; show a few bytes before it and after.
  const size_t at = offset > 0 ? offset - 1 : 0;
  const size_t begin = at > 16 ? at - 16 : 0;
  if (begin >= text.size()) return fmt::format("{} (at the end of the file)", message);
  return fmt::format("{}; near {}", message, quoted_bytes(text.substr(begin, 32), 32));
}

}  // namespace zt
