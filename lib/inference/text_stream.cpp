#include "inference/text_stream.hpp"

#include <algorithm>

#include "tokenizer/unicode.hpp"

namespace zt {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
// Ids of context decoded with each piece: enough for a decoder to see the neighbours it depends on.
constexpr size_t kContext = 4;

// The bytes of a UTF-8 character its lead byte announces; 0 for a continuation byte.
int utf8_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead < 0xC0) return 0;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  return 4;
}

// Each byte that is not part of valid UTF-8 (a model may draw any byte) as U+FFFD.
std::string whole_characters(std::string text) {
  std::string out;
  for (size_t bad; (bad = unicode::invalid_utf8_offset(text)) != std::string::npos;) {
    out.append(text, 0, bad);
    out += kReplacement;
    text.erase(0, bad + 1);
  }
  return out + text;
}

}  // namespace

bool ends_mid_character(const std::string& text) {
  if (text.size() >= kReplacement.size() && text.compare(text.size() - 3, 3, kReplacement) == 0) return true;
  // The last lead byte within the last 4 bytes, and whether its character is complete.
  for (size_t back = 1; back <= std::min<size_t>(4, text.size()); back++) {
    const int length = utf8_length(static_cast<unsigned char>(text[text.size() - back]));
    if (length > 0) return size_t(length) > back;
  }
  return false;  // continuation bytes alone: not UTF-8 to wait for
}

TextStream::TextStream(Decode decode, std::span<const int32_t> context)
    : decode_(std::move(decode)), ids_(context.begin(), context.end()) {
  read_ = ids_.size();
  prefix_ = read_ - std::min(read_, kContext);
}

std::string TextStream::push(int32_t id) {
  ids_.push_back(id);
  const std::span<const int32_t> all(ids_);
  const std::string before = decode_(all.subspan(prefix_, read_ - prefix_));
  const std::string now = decode_(all.subspan(prefix_));
  if (now.size() <= before.size() || ends_mid_character(now)) return "";
  prefix_ = read_;
  read_ = ids_.size();
  return whole_characters(now.substr(before.size()));
}

std::string TextStream::finish() {
  const std::span<const int32_t> all(ids_);
  const std::string before = decode_(all.subspan(prefix_, read_ - prefix_));
  std::string rest = decode_(all.subspan(prefix_));
  rest = rest.size() > before.size() ? rest.substr(before.size()) : "";
  prefix_ = read_ = ids_.size();
  if (!rest.empty() && ends_mid_character(rest) && rest.compare(rest.size() - std::min<size_t>(3, rest.size()),
                                                                  3, kReplacement) != 0) {
    // Drop the incomplete character's bytes, then mark where it was.
    size_t cut = rest.size();
    while (cut > 0 && utf8_length(static_cast<unsigned char>(rest[cut - 1])) == 0) cut--;
    rest.resize(cut > 0 ? cut - 1 : 0);
    rest += kReplacement;
  }
  return whole_characters(rest);
}

}  // namespace zt
