#pragma once
// "Did you mean ...?" for misspelled keys: edit distance (insertions, deletions, substitutions and
// swaps of two neighbouring characters), case-insensitive.
#include <optional>
#include <string>
#include <vector>

namespace zt::config {

size_t edit_distance(const std::string& a, const std::string& b);
// The candidate closest to `word`, if it is close enough to be a plausible typo
// (distance <= max(2, length / 3)); ties go to the first candidate. Failing that, the first
// candidate that is `word` with words left out or added, both of two words or more
// (num_epochs: num_train_epochs).
std::optional<std::string> closest_match(const std::string& word, const std::vector<std::string>& candidates);
// `word` is so close to `known` that it can only be a misspelling of it, not another tool's key:
// within max(1, length / 8) edits (zero_optimisation, gradient_acumulation_steps, traning).
bool is_near_miss(const std::string& word, const std::string& known);

}  // namespace zt::config
