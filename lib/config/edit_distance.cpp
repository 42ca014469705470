#include "config/edit_distance.hpp"

#include <algorithm>
#include <cctype>
#include <numeric>

namespace zt::config {

size_t edit_distance(const std::string& a, const std::string& b) {
  auto same = [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  };
  // Three rows of the dynamic-programming table: a swap looks two rows back.
  std::vector<size_t> before(b.size() + 1), previous(b.size() + 1), row(b.size() + 1);
  std::iota(previous.begin(), previous.end(), size_t(0));
  for (size_t i = 1; i <= a.size(); ++i) {
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      row[j] = std::min({previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (same(a[i - 1], b[j - 1]) ? 0 : 1)});
      if (i > 1 && j > 1 && same(a[i - 1], b[j - 2]) && same(a[i - 2], b[j - 1]))
        row[j] = std::min(row[j], before[j - 2] + 1);
    }
    std::swap(before, previous);
    std::swap(previous, row);
  }
  return previous[b.size()];
}

namespace {

// The words of a name: its parts between '_', '-' and '.', lower-case.
std::vector<std::string> words_of(const std::string& name) {
  std::vector<std::string> words(1);
  for (char c : name) {
    if (c == '_' || c == '-' || c == '.') {
      if (!words.back().empty()) words.emplace_back();
    } else {
      words.back() += char(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

// Every word of `part` is a word of `whole`, in order: num_epochs in num_train_epochs.
bool words_within(const std::vector<std::string>& part, const std::vector<std::string>& whole) {
  size_t at = 0;
  for (const auto& w : part) {
    while (at < whole.size() && whole[at] != w) ++at;
    if (at == whole.size()) return false;
    ++at;
  }
  return true;
}

}  // namespace

std::optional<std::string> closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  const size_t limit = std::max<size_t>(2, word.size() / 3);
  std::optional<std::string> best;
  size_t best_distance = limit + 1;
  for (const auto& c : candidates) {
    size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  if (best) return best;
  // Too far apart letter by letter, but one name is the other with words left out.
  const auto words = words_of(word);
  for (const auto& c : candidates) {
    const auto theirs = words_of(c);
    const bool shorter = words.size() < theirs.size();
    if (std::min(words.size(), theirs.size()) >= 2 &&
        (shorter ? words_within(words, theirs) : words_within(theirs, words)))
      return c;
  }
  return std::nullopt;
}

bool is_near_miss(const std::string& word, const std::string& known) {
  return edit_distance(word, known) <= std::max<size_t>(1, word.size() / 8);
}

}  // namespace zt::config
