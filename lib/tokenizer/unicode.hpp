#pragma once
// The Unicode the tokenizer needs: UTF-8 decoding and one flag byte per code point (the character
// classes of the pre-tokenizer regexes, and whether NFC can change the text around a character).
// Tables come from unicode_data.cpp (scripts/make_unicode_tables.py).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace zt::unicode {

enum Flag : uint8_t {
  kLetter = 1,      // \p{L}
  kNumber = 2,      // \p{N}
  kSpace = 4,       // \s: the White_Space property
  kUpperish = 8,    // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
  kLowerish = 16,   // [\p{Ll}\p{Lm}\p{Lo}\p{M}]
  kMark = 32,       // \p{M}
  kNfcStable = 64,  // combining class 0 and NFC_Quick_Check Yes: NFC leaves it and its neighbours' boundary alone
};

// A byte that does not start a valid UTF-8 sequence decodes to kInvalidBase + the byte, one byte
// long: it belongs to no class (not a letter, number or space) and NFC leaves it alone.
constexpr uint32_t kInvalidBase = 0x110000;

// The flag table: one byte per code point below 0x110000, built on first use.
const uint8_t* flag_table();

inline uint8_t flags(const uint8_t* table, uint32_t cp) { return cp < kInvalidBase ? table[cp] : uint8_t(kNfcStable); }
inline uint8_t flags(uint32_t cp) { return flags(flag_table(), cp); }

// Decodes the character starting at s[0] (n > 0 bytes available); `len` gets its length in bytes.
inline uint32_t decode(const char* s, size_t n, int& len) {
  const auto* u = reinterpret_cast<const unsigned char*>(s);
  const unsigned b0 = u[0];
  if (b0 < 0x80) {
    len = 1;
    return b0;
  }
  auto cont = [&](size_t i) { return i < n && (u[i] & 0xC0) == 0x80; };
  if (b0 >= 0xC2 && b0 <= 0xDF && cont(1)) {
    len = 2;
    return ((b0 & 0x1F) << 6) | (u[1] & 0x3F);
  }
  if (b0 >= 0xE0 && b0 <= 0xEF && cont(1) && cont(2)) {
    const uint32_t cp = ((b0 & 0x0F) << 12) | ((u[1] & 0x3F) << 6) | (u[2] & 0x3F);
    if (cp >= 0x800 && (cp < 0xD800 || cp > 0xDFFF)) {
      len = 3;
      return cp;
    }
  } else if (b0 >= 0xF0 && b0 <= 0xF4 && cont(1) && cont(2) && cont(3)) {
    const uint32_t cp = ((b0 & 0x07) << 18) | ((u[1] & 0x3F) << 12) | ((u[2] & 0x3F) << 6) | (u[3] & 0x3F);
    if (cp >= 0x10000 && cp <= 0x10FFFF) {
      len = 4;
      return cp;
    }
  }
  len = 1;
  return kInvalidBase + b0;
}

// Appends the UTF-8 bytes of cp (an invalid-byte code point appends its byte).
void append_utf8(std::string& out, uint32_t cp);

// The offset of the first byte that is not part of valid UTF-8, or npos when all of it is.
size_t invalid_utf8_offset(std::string_view text);

// Canonical combining class (0 for starters).
uint8_t combining_class(uint32_t cp);

const char* version();  // the Unicode version of the tables, e.g. "14.0.0"

}  // namespace zt::unicode
