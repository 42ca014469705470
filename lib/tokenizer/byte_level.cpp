#include "tokenizer/byte_level.hpp"

#include <array>

#include "tokenizer/unicode.hpp"

namespace zt::byte_level {
namespace {

struct Alphabet {
  std::array<uint32_t, 256> char_of{};
  std::array<int16_t, 512> byte_of{};  // code points below 512 only
  Alphabet() {
    byte_of.fill(-1);
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      char_of[size_t(b)] = printable ? uint32_t(b) : uint32_t(256 + extra++);
      byte_of[char_of[size_t(b)]] = int16_t(b);
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet a;
  return a;
}

}  // namespace

uint32_t char_of_byte(uint8_t b) { return alphabet().char_of[b]; }

std::optional<std::string> bytes_of(std::string_view token) {
  const Alphabet& a = alphabet();
  std::string out;
  out.reserve(token.size());
  for (size_t i = 0; i < token.size();) {
    int len = 0;
    const uint32_t cp = unicode::decode(token.data() + i, token.size() - i, len);
    if (cp >= a.byte_of.size() || a.byte_of[cp] < 0) return std::nullopt;
    out.push_back(char(a.byte_of[cp]));
    i += size_t(len);
  }
  return out;
}

std::string spelling_of(std::string_view bytes) {
  std::string out;
  for (char c : bytes) unicode::append_utf8(out, char_of_byte(uint8_t(c)));
  return out;
}

}  // namespace zt::byte_level
