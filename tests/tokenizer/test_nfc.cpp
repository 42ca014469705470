// NFC as Python's unicodedata gives it, on every character with a decomposition or a combining
// class, and on starters followed by marks in random order.
#include <catch2/catch.hpp>

#include "fixtures.hpp"
#include "tokenizer/nfc.hpp"
#include "tokenizer/unicode.hpp"

using namespace zt;

TEST_CASE("NFC equals Hugging Face's NFC normalizer", "[tokenizer]") {
  // Every character with a decomposition or a combining class, alone and decomposed, and starters
  // followed by marks in random order: one per line (a line break is a starter, so each line
  // normalizes on its own).
  const auto fixture = test::read_fixture("nfc.json");
  CHECK(fixture["unicode"].get<std::string>() == unicode::version());
  const std::string input = fixture["input"], expected = fixture["expected"];
  std::string out;
  append_nfc(input, out);
  size_t mismatches = 0, lines = 0;
  for (size_t a = 0, b = 0; a <= input.size() && b <= out.size(); ++lines) {
    size_t a_end = std::min(input.find('\n', a), input.size()),
           e_end = std::min(expected.find('\n', b), expected.size());
    size_t o_end = std::min(out.find('\n', b), out.size());
    const std::string line = input.substr(a, a_end - a), want = expected.substr(b, e_end - b),
                      got = out.substr(b, o_end - b);
    if (got != want && ++mismatches <= 10) {
      INFO("line " << lines << ": " << line);
      CHECK(got == want);
    }
    if (nfc_quick_yes(line)) CHECK(line == want);  // quick-yes text is NFC already
    if (got != want) break;  // the lines no longer align
    a = a_end + 1;
    b = e_end + 1;
  }
  CHECK(out == expected);
  CHECK(lines > 5000);
}

TEST_CASE("NFC maps each output byte back to its source", "[tokenizer]") {
  std::string out;
  std::vector<uint32_t> origin;
  append_nfc("ab e\xCC\x81x", out, &origin);  // "ab " + e + U+0301 + "x"
  CHECK(out == "ab \xC3\xA9x");
  CHECK(origin == std::vector<uint32_t>{0, 1, 2, 3, 3, 6});
}
