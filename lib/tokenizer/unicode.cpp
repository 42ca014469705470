#include "tokenizer/unicode.hpp"

#include <algorithm>
#include <memory>

#include "tokenizer/unicode_data.hpp"

namespace zt::unicode {

using namespace unicode_data;

const uint8_t* flag_table() {
  static const std::unique_ptr<uint8_t[]> table = [] {
    std::unique_ptr<uint8_t[]> t(new uint8_t[kInvalidBase]);
    for (size_t i = 0; i < kFlagRunCount; ++i) {
      const uint32_t begin = kFlagRuns[i] >> 8;
      const uint32_t end = i + 1 < kFlagRunCount ? kFlagRuns[i + 1] >> 8 : kInvalidBase;
      std::fill(t.get() + begin, t.get() + end, uint8_t(kFlagRuns[i] & 0xFF));
    }
    return t;
  }();
  return table.get();
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp >= kInvalidBase) {
    out.push_back(char(cp - kInvalidBase));
  } else if (cp < 0x80) {
    out.push_back(char(cp));
  } else if (cp < 0x800) {
    out.push_back(char(0xC0 | (cp >> 6)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(char(0xE0 | (cp >> 12)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(char(0xF0 | (cp >> 18)));
    out.push_back(char(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  }
}

size_t invalid_utf8_offset(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    int len = 0;
    if (decode(text.data() + i, text.size() - i, len) >= kInvalidBase) return i;
    i += size_t(len);
  }
  return std::string_view::npos;
}

uint8_t combining_class(uint32_t cp) {
  if (cp < 0x300 || cp >= kInvalidBase) return 0;
  const uint32_t* end = kCombiningClassRuns + kCombiningClassRunCount;
  const uint32_t* run = std::upper_bound(kCombiningClassRuns, end, (cp << 8) | 0xFF) - 1;
  return uint8_t(*run & 0xFF);
}

const char* version() { return kUnicodeVersion; }

}  // namespace zt::unicode
