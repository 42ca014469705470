// The hand-written scanners split text as the pre-tokenizer regexes do (the `regex` module's
// matches, with \s spelt as the White_Space property that Oniguruma and Rust use).
#include <catch2/catch.hpp>

#include "fixtures.hpp"
#include "tokenizer/split_pattern.hpp"

using namespace zt;

TEST_CASE("the scanners give the regexes' matches on the corpus", "[tokenizer]") {
  const auto fixture = test::read_fixture("splits.json");
  const auto corpus = test::read_corpus();
  const std::pair<const char*, SplitPattern> patterns[] = {
      {"gpt2", SplitPattern::Gpt2}, {"llama3", SplitPattern::Llama3}, {"qwen2", SplitPattern::Qwen2},
      {"tekken", SplitPattern::Tekken}};
  for (const auto& [name, pattern] : patterns) {
    SECTION(name) {
      const auto& expected = fixture[name];
      CHECK(split_pattern_of_regex(expected["regex"].get<std::string>()) == pattern);
      size_t mismatches = 0;
      for (size_t i = 0; i < corpus.size(); ++i) {
        std::vector<uint32_t> ends;
        split(pattern, corpus[i].text, [&](size_t, size_t end) { ends.push_back(uint32_t(end)); });
        if (test::fnv_hash(ends) != expected["samples"][i].get<std::string>() && ++mismatches <= 3) {
          INFO(name << " sample " << i << " (" << corpus[i].source << "): " << corpus[i].text.substr(0, 300));
          CHECK(test::fnv_hash(ends) == expected["samples"][i].get<std::string>());
        }
      }
      CHECK(mismatches == 0);
    }
  }
}

TEST_CASE("an unknown regex has no scanner", "[tokenizer]") {
  CHECK_FALSE(split_pattern_of_regex(R"(\p{L}+|\s+)").has_value());
}
