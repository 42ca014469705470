// Streaming text from ids: every piece is whole UTF-8 (a byte-level token holding part of a
// character waits for the rest), the pieces add up to the decoding of all ids, and a tokenizer that
// decodes with its neighbours (SentencePiece's leading space) streams the text of the whole; an
// incomplete character at the end becomes U+FFFD.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "inference/text_codec.hpp"
#include "inference/text_stream.hpp"
#include "tokenizer/unicode.hpp"

using namespace zt;

namespace {

const std::string kText = ", naïve café — 3×4 = 12 😀 emoji; 日本語 and spaces   then\nnew lines. ";

std::string tokenizer_path(const std::string& name) {
  return std::string(ZT_SOURCE_DIR) + "/tests/fixtures/tokenizer/trimmed/" + name;
}

// Streams ids after context through the codec; checks every piece and returns their concatenation.
std::string stream(const TextCodec& codec, const std::vector<int32_t>& context, const std::vector<int32_t>& ids) {
  TextStream s([&](std::span<const int32_t> x) { return codec.decode(x); }, context);
  std::string out;
  for (int32_t id : ids) {
    const std::string piece = s.push(id);
    INFO("piece after id " << id << ": " << piece);
    REQUIRE(unicode::invalid_utf8_offset(piece) == std::string::npos);
    out += piece;
  }
  return out + s.finish();
}

}  // namespace

TEST_CASE("bytes stream as whole characters", "[inference][stream]") {
  const TextCodec bytes = TextCodec::bytes();
  const std::vector<int32_t> ids = bytes.prompt(kText);
  CHECK(stream(bytes, {}, ids) == kText);
  // A four-byte character comes out once, with its last byte.
  TextStream s([&](std::span<const int32_t> x) { return bytes.decode(x); });
  const std::string emoji = "😀";
  for (size_t i = 0; i + 1 < emoji.size(); i++) CHECK(s.push(uint8_t(emoji[i])).empty());
  CHECK(s.push(uint8_t(emoji.back())) == emoji);
}

TEST_CASE("byte-level and SentencePiece tokenizers stream the text of the whole", "[inference][stream]") {
  for (const char* name : {"gpt2", "llama3", "llama2"}) {
    INFO(name);
    const TextCodec codec = TextCodec::tokenizer(tokenizer_path(name));
    const std::vector<int32_t> prompt = codec.prompt("Once upon a time");
    const std::vector<int32_t> all = codec.prompt("Once upon a time" + kText);
    REQUIRE(std::vector<int32_t>(all.begin(), all.begin() + ptrdiff_t(prompt.size())) == prompt);
    const std::vector<int32_t> rest(all.begin() + ptrdiff_t(prompt.size()), all.end());
    const std::string whole = codec.decode(all), before = codec.decode(prompt);
    REQUIRE(whole.substr(0, before.size()) == before);
    CHECK(stream(codec, prompt, rest) == whole.substr(before.size()));
  }
}

TEST_CASE("an incomplete character at the end becomes U+FFFD", "[inference][stream]") {
  const TextCodec bytes = TextCodec::bytes();
  TextStream s([&](std::span<const int32_t> x) { return bytes.decode(x); });
  CHECK(s.push('a') == "a");
  CHECK(s.push(0xE6).empty());  // the first of the three bytes of 日
  CHECK(s.push(0x97).empty());
  CHECK(s.finish() == "\xEF\xBF\xBD");
  TextStream lone([&](std::span<const int32_t> x) { return bytes.decode(x); });
  CHECK(lone.push(0x80) == "\xEF\xBF\xBD");  // a continuation byte without its lead
  CHECK(lone.push(0xE6).empty());
  CHECK(lone.push('b') == "\xEF\xBF\xBD" "b");  // a lead byte whose character never came
  CHECK(ends_mid_character("ab\xE6\x97"));
  CHECK_FALSE(ends_mid_character("ab\xE6\x97\xA5"));
  CHECK_FALSE(ends_mid_character("plain"));
}
