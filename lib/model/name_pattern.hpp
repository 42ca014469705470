#pragma once
// Patterns over Hugging Face parameter names (training.freeze; docs/config.md): the name's
// segments, separated by '.', are matched one by one, and within a segment
//   text      matches itself
//   *         any run of characters ("*" any one segment, "*_proj" q_proj, k_proj, ...)
//   {3-7}     an integer from 3 to 7
//   {a,b,c}   one of the listed texts ({0,2,5}, {q,v}_proj)
// A pattern matches a tensor when it matches the whole name, or its leading segments (a module:
// "model.layers.{0-3}" is every tensor of the first four layers, "model.embed_tokens" the token
// embedding's weight).
#include <string>
#include <string_view>
#include <vector>

namespace zt {

class NamePattern {
public:
  // Throws zt::Error saying what is malformed (an unclosed brace, an empty segment, a range whose
  // ends are not integers or are in the wrong order).
  explicit NamePattern(std::string text);
  const std::string& text() const { return text_; }
  bool matches(std::string_view name) const;

private:
  // One piece of a segment: literal text, a star, or a set of alternatives.
  struct Piece {
    enum Kind { Text, Star, Choice, IntRange } kind = Text;
    std::string text;                   // Text
    std::vector<std::string> choices;   // Choice
    long long low = 0, high = 0;        // IntRange
  };
  using Segment = std::vector<Piece>;
  static bool match_segment(const Segment& segment, size_t piece, std::string_view s);

  std::string text_;
  std::vector<Segment> segments_;
};

}  // namespace zt
