#pragma once
// The added tokens of a tokenizer (special tokens such as <|begin_of_text|>, and others such as
// Qwen's <think>): found in the text before anything else, leftmost first and the longest at a
// position, as Hugging Face's AddedVocabulary finds them. Special tokens are looked for only when
// asked; the others always.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zt {

struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool special = false;
  bool lstrip = false, rstrip = false;  // the token takes the whitespace before / after it
  bool single_word = false;             // only where no letter, digit or _ touches it
};

class AddedTokens {
public:
  AddedTokens() = default;
  explicit AddedTokens(std::vector<AddedToken> tokens);

  struct Match {
    size_t begin, end;  // the text the token replaces (with whitespace it strips)
    int32_t id;
  };
  // The first match at or after `from`, or nothing.
  std::optional<Match> find(std::string_view text, size_t from, bool special) const;
  // Whether any token can match (with or without the special ones).
  bool any(bool special) const { return special ? !tokens_.empty() : has_plain_; }

  const std::vector<AddedToken>& tokens() const { return tokens_; }
  const AddedToken* by_content(std::string_view content) const;

private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> next;  // sorted by byte
    int32_t token = -1;                             // index in tokens_ of the token ending here
  };
  // The longest token that matches at `at` (special ones only when allowed), or -1.
  int32_t longest_at(std::string_view text, size_t at, bool special) const;

  std::vector<AddedToken> tokens_;
  std::vector<Node> trie_;
  bool first_any_[256] = {}, first_plain_[256] = {};
  bool has_plain_ = false;
};

}  // namespace zt
