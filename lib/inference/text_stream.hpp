#pragma once
// Generated ids to text as they come, for streaming: push() returns the text that each new id
// completes and never half of a UTF-8 character (a byte-level token may hold part of one; it waits
// for the rest); bytes that can be no part of UTF-8 come out as U+FFFD. Each piece is decoded with the ids before it,
// so a tokenizer whose decoding depends on its neighbours (SentencePiece's leading space) streams the text of the
// whole.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace zt {

class TextStream {
public:
  using Decode = std::function<std::string(std::span<const int32_t>)>;
  // context: the ids before the first pushed one (the prompt), whose text is not returned.
  TextStream(Decode decode, std::span<const int32_t> context = {});

  std::string push(int32_t id);
  // The rest once generation ends: an incomplete character left at the end becomes U+FFFD.
  std::string finish();

private:
  // The text ids [prefix_, end) add to ids [prefix_, read_), or "" while it ends mid-character.
  Decode decode_;
  std::vector<int32_t> ids_;
  size_t prefix_ = 0, read_ = 0;  // ids_[prefix_, read_) was returned already; from prefix_ on is the context
};

// Whether text ends inside a UTF-8 character (a lead byte without all of its continuation bytes),
// or with U+FFFD, which a byte-fallback decoder writes for bytes it has not seen the end of.
bool ends_mid_character(const std::string& text);

}  // namespace zt
