#pragma once
// The pre-tokenizer regexes of byte-level BPE tokenizers, as hand-written scanners. Each scanner
// gives exactly the matches of its regex under a backtracking engine (Oniguruma, as Hugging Face
// tokenizers runs it; fancy-regex, as tiktoken does): at each position the first alternative that
// matches, quantifiers greedy. The matches cover the text, so a piece ends where the next begins.
#include <cstddef>
#include <optional>
#include <string_view>

namespace zt {

enum class SplitPattern {
  Gpt2,    // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  Llama3,  // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
           // ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  Qwen2,   // as Llama3 with \p{N} alone for \p{N}{1,3}
  Tekken,  // Mistral-Nemo: letter runs by case ([\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] and [\p{Ll}\p{Lm}\p{Lo}\p{M}]), \p{N},
           // [\r\n/]* after symbols
};

// The pattern a tokenizer.json regex string spells, or nothing for a regex without a scanner.
std::optional<SplitPattern> split_pattern_of_regex(std::string_view regex);
std::string_view regex_of(SplitPattern pattern);

// The end of the match that starts at `begin` (< text.size()).
size_t match_end(SplitPattern pattern, std::string_view text, size_t begin);

// Calls piece(begin, end) for each match, in order.
template <typename F>
void split(SplitPattern pattern, std::string_view text, F&& piece) {
  for (size_t begin = 0; begin < text.size();) {
    const size_t end = match_end(pattern, text, begin);
    piece(begin, end);
    begin = end;
  }
}

}  // namespace zt
