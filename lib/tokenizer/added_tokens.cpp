#include "tokenizer/added_tokens.hpp"

#include <algorithm>

#include "tokenizer/unicode.hpp"

namespace zt {
namespace {

bool is_word_char(std::string_view text, size_t at) {
  int len = 0;
  const uint32_t cp = unicode::decode(text.data() + at, text.size() - at, len);
  return cp == '_' || (unicode::flags(cp) & (unicode::kLetter | unicode::kNumber));
}

// The start of the character that ends at `end`.
size_t previous_char(std::string_view text, size_t end) {
  size_t i = end - 1;
  while (i > 0 && end - i < 4 && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) --i;
  return i;
}

bool is_space_at(std::string_view text, size_t at, int& len) {
  return unicode::flags(unicode::decode(text.data() + at, text.size() - at, len)) & unicode::kSpace;
}

}  // namespace

AddedTokens::AddedTokens(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)), trie_(1) {
  for (size_t t = 0; t < tokens_.size(); ++t) {
    const std::string& content = tokens_[t].content;
    if (content.empty()) continue;
    int32_t node = 0;
    for (char c : content) {
      auto& next = trie_[size_t(node)].next;
      auto it = std::lower_bound(next.begin(), next.end(), uint8_t(c),
                                 [](const auto& e, uint8_t b) { return e.first < b; });
      if (it != next.end() && it->first == uint8_t(c)) {
        node = it->second;
        continue;
      }
      const int32_t child = int32_t(trie_.size());
      next.insert(it, {uint8_t(c), child});
      trie_.emplace_back();  // after this, `next` may refer to a moved node: not used again
      node = child;
    }
    trie_[size_t(node)].token = int32_t(t);
    first_any_[uint8_t(content[0])] = true;
    if (!tokens_[t].special) first_plain_[uint8_t(content[0])] = true, has_plain_ = true;
  }
}

int32_t AddedTokens::longest_at(std::string_view text, size_t at, bool special) const {
  int32_t node = 0, best = -1;
  for (size_t i = at; i < text.size(); ++i) {
    const auto& next = trie_[size_t(node)].next;
    auto it = std::lower_bound(next.begin(), next.end(), uint8_t(text[i]),
                               [](const auto& e, uint8_t b) { return e.first < b; });
    if (it == next.end() || it->first != uint8_t(text[i])) break;
    node = it->second;
    const int32_t t = trie_[size_t(node)].token;
    if (t >= 0 && (special || !tokens_[size_t(t)].special)) best = t;
  }
  return best;
}

std::optional<AddedTokens::Match> AddedTokens::find(std::string_view text, size_t from, bool special) const {
  const bool* first = special ? first_any_ : first_plain_;
  for (size_t i = from; i < text.size(); ++i) {
    if (!first[uint8_t(text[i])]) continue;
    const int32_t t = longest_at(text, i, special);
    if (t < 0) continue;
    const AddedToken& token = tokens_[size_t(t)];
    size_t begin = i, end = i + token.content.size();
    if (token.single_word && ((begin > 0 && is_word_char(text, previous_char(text, begin))) ||
                              (end < text.size() && is_word_char(text, end))))
      continue;
    int len = 0;
    if (token.lstrip)
      while (begin > from) {
        const size_t prev = previous_char(text, begin);
        if (!is_space_at(text, prev, len)) break;
        begin = prev;
      }
    if (token.rstrip)
      while (end < text.size() && is_space_at(text, end, len)) end += size_t(len);
    return Match{begin, end, token.id};
  }
  return std::nullopt;
}

const AddedToken* AddedTokens::by_content(std::string_view content) const {
  for (const AddedToken& t : tokens_)
    if (t.content == content) return &t;
  return nullptr;
}

}  // namespace zt
