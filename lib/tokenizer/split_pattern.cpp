#include "tokenizer/split_pattern.hpp"

#include "tokenizer/unicode.hpp"

namespace zt {
namespace {

using namespace unicode;

constexpr std::string_view kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr std::string_view kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| )"
    R"(?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kTekken =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|)"
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|)"
    R"(\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

constexpr uint8_t kWordish = kLetter | kNumber | kSpace;  // what [^\s\p{L}\p{N}] excludes

// One character of the text: code point, flags, length.
struct Char {
  uint32_t cp = 0;
  uint8_t flags = 0;
  int len = 0;
};

class Scanner {
public:
  explicit Scanner(std::string_view text) : s_(text.data()), n_(text.size()), table_(flag_table()) {}

  Char at(size_t i) const {
    Char c;
    const auto byte = static_cast<unsigned char>(s_[i]);
    if (byte < 0x80) {
      c.cp = byte;
      c.len = 1;
    } else {
      c.cp = decode(s_ + i, n_ - i, c.len);
    }
    c.flags = flags(table_, c.cp);
    return c;
  }
  size_t size() const { return n_; }

  // The end of the run of characters from i whose flags intersect `any` (i itself if none do).
  size_t run(size_t i, uint8_t any) const {
    while (i < n_) {
      const Char c = at(i);
      if (!(c.flags & any)) break;
      i += size_t(c.len);
    }
    return i;
  }
  // The end of the run of [^\s\p{L}\p{N}] characters from i.
  size_t run_other(size_t i) const {
    while (i < n_) {
      const Char c = at(i);
      if (c.flags & kWordish) break;
      i += size_t(c.len);
    }
    return i;
  }
  // Up to `max` \p{N} characters from i.
  size_t numbers(size_t i, int max) const {
    for (int k = 0; k < max && i < n_; ++k) {
      const Char c = at(i);
      if (!(c.flags & kNumber)) break;
      i += size_t(c.len);
    }
    return i;
  }
  // The end of [\r\n]* (or [\r\n/]* with slash) from i.
  size_t line_breaks(size_t i, bool slash) const {
    while (i < n_ && (s_[i] == '\r' || s_[i] == '\n' || (slash && s_[i] == '/'))) ++i;
    return i;
  }
  // 's 't 're 've 'm 'll 'd after the apostrophe at i: the end of the match, or 0. Case-insensitive
  // matching follows Unicode case folding, under which U+017F (long s) is an s.
  size_t contraction(size_t i, bool ignore_case) const {
    auto is = [&](size_t k, char lower) {
      if (k >= n_) return false;
      const char c = s_[k];
      return c == lower || (ignore_case && c == char(lower - 'a' + 'A'));
    };
    const size_t a = i + 1;
    if (is(a, 's') || is(a, 't') || is(a, 'm') || is(a, 'd')) return a + 1;
    if (ignore_case && a + 1 < n_ && s_[a] == '\xC5' && s_[a + 1] == '\xBF') return a + 2;  // U+017F
    if ((is(a, 'r') || is(a, 'v')) && is(a + 1, 'e')) return a + 2;
    if (is(a, 'l') && is(a + 1, 'l')) return a + 2;
    return 0;
  }
  // Whitespace from i (a \s character): \s*[\r\n]+ when `newline_rule`, then \s+(?!\S), then \s+.
  size_t whitespace(size_t i, bool newline_rule) const {
    size_t last = i, last_break = SIZE_MAX, end = i;
    while (end < n_) {
      const Char c = at(end);
      if (!(c.flags & kSpace)) break;
      if (c.cp == '\r' || c.cp == '\n') last_break = end;
      last = end;
      end += size_t(c.len);
    }
    if (newline_rule && last_break != SIZE_MAX) return last_break + 1;  // greedy \s*, then back to the last break
    if (end == n_ || last == i) return end;                              // \s+(?!\S) at the end, or one \s
    return last;                                                         // all but the last, before a non-space
  }

  // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+ from i: greedy, backtracking the first
  // run until the second can start. The end of the match, or 0.
  size_t upper_then_lower(size_t i) const {
    size_t end = i, last_lowerish = SIZE_MAX, last_len = 0;
    while (end < n_) {
      const Char c = at(end);
      if (!(c.flags & kUpperish)) break;
      if (c.flags & kLowerish) last_lowerish = end, last_len = size_t(c.len);
      end += size_t(c.len);
    }
    if (end < n_ && (at(end).flags & kLowerish)) return run(end, kLowerish);
    // A lowerish character inside the first run starts the second; the one after it is not lowerish.
    return last_lowerish == SIZE_MAX ? 0 : last_lowerish + last_len;
  }
  // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]* from i: the end, or 0.
  size_t upper_run_then_lower(size_t i) const {
    const size_t end = run(i, kUpperish);
    return end == i ? 0 : run(end, kLowerish);
  }

private:
  const char* s_;
  size_t n_;
  const uint8_t* table_;
};

size_t gpt2(const Scanner& t, size_t p) {
  const Char c = t.at(p);
  if (c.cp == '\'') {
    if (size_t e = t.contraction(p, false)) return e;
  }
  size_t q = p;
  Char d = c;
  if (c.cp == ' ' && p + 1 < t.size()) {  // the optional leading space of ?\p{L}+, ?\p{N}+, ?[^\s...]+
    d = t.at(p + 1);
    if (d.flags & (kLetter | kNumber) || !(d.flags & kWordish)) q = p + 1;
  }
  if (q == p) d = c;
  if (d.flags & kLetter) return t.run(q, kLetter);
  if (d.flags & kNumber) return t.run(q, kNumber);
  if (!(d.flags & kWordish)) return t.run_other(q);
  return t.whitespace(p, false);
}

size_t llama3_like(const Scanner& t, size_t p, int max_digits) {
  const Char c = t.at(p);
  if (c.cp == '\'') {
    if (size_t e = t.contraction(p, true)) return e;
  }
  if (c.flags & kLetter) return t.run(p, kLetter);
  const size_t next = p + size_t(c.len);
  const bool is_break = c.cp == '\r' || c.cp == '\n';
  if (!is_break && !(c.flags & kNumber) && next < t.size() && (t.at(next).flags & kLetter)) return t.run(next, kLetter);
  if (c.flags & kNumber) return t.numbers(p, max_digits);
  if (c.cp == ' ' && next < t.size() && !(t.at(next).flags & kWordish)) return t.line_breaks(t.run_other(next), false);
  if (!(c.flags & kWordish)) return t.line_breaks(t.run_other(p), false);
  return t.whitespace(p, true);
}

size_t tekken(const Scanner& t, size_t p) {
  const Char c = t.at(p);
  const size_t next = p + size_t(c.len);
  const bool prefixable = c.cp != '\r' && c.cp != '\n' && !(c.flags & (kLetter | kNumber));
  if (prefixable && next < t.size()) {
    if (size_t e = t.upper_then_lower(next)) return e;
  }
  if (size_t e = t.upper_then_lower(p)) return e;
  if (prefixable && next < t.size()) {
    if (size_t e = t.upper_run_then_lower(next)) return e;
  }
  if (size_t e = t.upper_run_then_lower(p)) return e;
  if (c.flags & kNumber) return next;
  if (c.cp == ' ' && next < t.size() && !(t.at(next).flags & kWordish)) return t.line_breaks(t.run_other(next), true);
  if (!(c.flags & kWordish)) return t.line_breaks(t.run_other(p), true);
  return t.whitespace(p, true);
}

}  // namespace

std::optional<SplitPattern> split_pattern_of_regex(std::string_view regex) {
  for (SplitPattern p : {SplitPattern::Gpt2, SplitPattern::Llama3, SplitPattern::Qwen2, SplitPattern::Tekken})
    if (regex == regex_of(p)) return p;
  return std::nullopt;
}

std::string_view regex_of(SplitPattern pattern) {
  switch (pattern) {
    case SplitPattern::Gpt2: return kGpt2;
    case SplitPattern::Llama3: return kLlama3;
    case SplitPattern::Qwen2: return kQwen2;
    case SplitPattern::Tekken: return kTekken;
  }
  return {};
}

size_t match_end(SplitPattern pattern, std::string_view text, size_t begin) {
  const Scanner t(text);
  switch (pattern) {
    case SplitPattern::Gpt2: return gpt2(t, begin);
    case SplitPattern::Llama3: return llama3_like(t, begin, 3);
    case SplitPattern::Qwen2: return llama3_like(t, begin, 1);
    case SplitPattern::Tekken: return tekken(t, begin);
  }
  return text.size();
}

}  // namespace zt
