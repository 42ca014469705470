#include "data/tokenize_advice.hpp"

#include <fmt/format.h>

#include <filesystem>

namespace zt {

namespace {

constexpr std::string_view kPlaceholder = "MODEL_DIR";

std::string shell_quoted(std::string_view s) {
  const bool plain = !s.empty() && s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
                                                       "_./-+=:,@%") == std::string_view::npos;
  if (plain) return std::string(s);
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::string tokenized_name(const std::string& input) {
  std::filesystem::path p(input);
  if (p.extension() == ".bin") return p.replace_extension(".tokens.bin").string();
  return p.replace_extension(".bin").string();
}

std::string tokenize_command(const std::string& input, std::string_view tokenizer) {
  return fmt::format("zerotrain tokenize --tokenizer {} {} -o {}",
                     tokenizer.empty() ? std::string(kPlaceholder) : shell_quoted(tokenizer), shell_quoted(input),
                     shell_quoted(tokenized_name(input)));
}

std::string tokenizer_placeholder_note(std::string_view tokenizer) {
  if (!tokenizer.empty()) return "";
  return fmt::format(" ({}: the directory of your model's tokenizer.json, or GPT-2's vocab.json and merges.txt)",
                     kPlaceholder);
}

}  // namespace zt
