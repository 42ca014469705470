#include "core/printable.hpp"

#include <fmt/format.h>

namespace zt {

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c != 0x7f) {  // bytes of UTF-8 sequences (>= 0x80) pass unchanged
      out.push_back(ch);
      continue;
    }
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default: out += fmt::format("\\x{:02x}", c);
    }
  }
  return out;
}

}  // namespace zt
