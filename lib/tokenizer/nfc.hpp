#pragma once
// Unicode Normalization Form C (the NFC normalizer of Qwen's tokenizers).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace zt {

// Appends NFC(text) to out. Text already in NFC (any text of NFC-stable characters: all of ASCII,
// most of every script) is copied as it is. With `origin`, each appended byte gets the offset in
// `text` it came from (for a normalized stretch: the offset where the stretch starts).
void append_nfc(std::string_view text, std::string& out, std::vector<uint32_t>* origin = nullptr);

// True when append_nfc would copy text unchanged because every character is NFC-stable.
bool nfc_quick_yes(std::string_view text);

}  // namespace zt
