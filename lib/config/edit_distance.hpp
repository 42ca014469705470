#pragma once
// "Did you mean ...?" for misspelled keys: Levenshtein distance, case-insensitive.
#include <optional>
#include <string>
#include <vector>

namespace zt::config {

size_t edit_distance(const std::string& a, const std::string& b);
// The candidate closest to `word`, if it is close enough to be a plausible typo
// (distance <= max(2, length / 3)); ties go to the first candidate.
std::optional<std::string> closest_match(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace zt::config
