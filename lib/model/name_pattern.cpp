#include "model/name_pattern.hpp"

#include <charconv>

#include "core/error.hpp"

namespace zt {

namespace {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == sep) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  return out;
}

bool parse_integer(std::string_view s, long long& value) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  return ec == std::errc() && end == s.data() + s.size() && value >= 0;
}

}  // namespace

NamePattern::NamePattern(std::string text) : text_(std::move(text)) {
  if (text_.empty()) fail("an empty pattern (expected a parameter name such as model.embed_tokens)");
  for (std::string_view seg : split(text_, '.')) {
    if (seg.empty()) fail("\"{}\" has an empty segment (two dots, or a dot at an end)", text_);
    Segment segment;
    for (size_t i = 0; i < seg.size();) {
      if (seg[i] == '*') {
        segment.push_back({Piece::Star});
        ++i;
      } else if (seg[i] == '{') {
        const size_t close = seg.find('}', i);
        if (close == std::string_view::npos) fail("\"{}\": a '{{' without its '}}'", text_);
        const std::string_view inside = seg.substr(i + 1, close - i - 1);
        const size_t dash = inside.find('-');
        Piece piece;
        if (dash != std::string_view::npos && inside.find(',') == std::string_view::npos) {
          piece.kind = Piece::IntRange;
          if (!parse_integer(inside.substr(0, dash), piece.low) ||
              !parse_integer(inside.substr(dash + 1), piece.high) || piece.low > piece.high)
            fail("\"{}\": {{{}}} is not a range of integers (expected {{low-high}} with low <= high, such as {{0-3}})",
                 text_, inside);
        } else {
          piece.kind = Piece::Choice;
          for (std::string_view c : split(inside, ',')) {
            if (c.empty()) fail("\"{}\": {{{}}} has an empty choice", text_, inside);
            piece.choices.emplace_back(c);
          }
        }
        segment.push_back(std::move(piece));
        i = close + 1;
      } else if (seg[i] == '}') {
        fail("\"{}\": a '}}' without its '{{'", text_);
      } else {
        const size_t next = seg.find_first_of("*{}", i);
        const size_t end = next == std::string_view::npos ? seg.size() : next;
        segment.push_back({Piece::Text, std::string(seg.substr(i, end - i))});
        i = end;
      }
    }
    segments_.push_back(std::move(segment));
  }
}

bool NamePattern::match_segment(const Segment& segment, size_t piece, std::string_view s) {
  if (piece == segment.size()) return s.empty();
  const Piece& p = segment[piece];
  switch (p.kind) {
    case Piece::Text:
      return s.substr(0, p.text.size()) == p.text && match_segment(segment, piece + 1, s.substr(p.text.size()));
    case Piece::Star:
      for (size_t n = 0; n <= s.size(); ++n)
        if (match_segment(segment, piece + 1, s.substr(n))) return true;
      return false;
    case Piece::Choice:
      for (const std::string& c : p.choices)
        if (s.substr(0, c.size()) == c && match_segment(segment, piece + 1, s.substr(c.size()))) return true;
      return false;
    case Piece::IntRange:
      for (size_t n = 1; n <= s.size(); ++n) {
        long long v = 0;
        const std::string_view digits = s.substr(0, n);
        // Written as a number is: no leading zero (layer "01" is no layer 1).
        if (digits.size() > 1 && digits[0] == '0') break;
        if (!parse_integer(digits, v)) break;
        if (v >= p.low && v <= p.high && match_segment(segment, piece + 1, s.substr(n))) return true;
      }
      return false;
  }
  return false;
}

bool NamePattern::matches(std::string_view name) const {
  const std::vector<std::string_view> parts = split(name, '.');
  if (segments_.size() > parts.size()) return false;
  for (size_t i = 0; i < segments_.size(); ++i)
    if (!match_segment(segments_[i], 0, parts[i])) return false;
  return true;
}

}  // namespace zt
