#pragma once
// GPT-2's byte-level alphabet: each byte is written as a printable character (printable Latin-1
// bytes as themselves, the others as U+0100 + n), so that any byte string is a string of
// characters a BPE vocabulary can hold.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace zt::byte_level {

// The code point that stands for byte b.
uint32_t char_of_byte(uint8_t b);

// The bytes a vocabulary entry stands for, or nothing when a character of it is outside the
// alphabet (such an entry never comes out of byte-level pre-tokenization).
std::optional<std::string> bytes_of(std::string_view token);

// The vocabulary spelling of raw bytes.
std::string spelling_of(std::string_view bytes);

}  // namespace zt::byte_level
