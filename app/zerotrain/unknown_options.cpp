#include "unknown_options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "config/edit_distance.hpp"
#include "config/trainer_arguments.hpp"

namespace zt::cli {

namespace {

// Lower-case, '-' read as '_'.
std::string normal(const std::string& name) {
  std::string s;
  for (char c : name) s += c == '-' ? '_' : char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string without_separators(const std::string& name) {
  std::string s;
  for (char c : normal(name))
    if (c != '_') s += c;
  return s;
}

std::optional<std::string> from_hints(const std::string& word, const std::vector<std::string>& candidates) {
  for (const auto& a : config::trainer_arguments())
    for (const auto& hint : a.hints)
      if (normal(word) == hint && std::find(candidates.begin(), candidates.end(), a.name) != candidates.end())
        return a.name;
  return std::nullopt;
}

// The first word of a name: lora of lora_rank.
std::string first_word(const std::string& name) {
  const std::string n = normal(name);
  return n.substr(0, n.find('_'));
}

// The candidate config::closest_match finds for `word`, compared lower-case with '-' as '_'.
std::optional<std::string> closest(const std::string& word, const std::vector<std::string>& candidates) {
  std::vector<std::string> normals;
  for (const auto& c : candidates) normals.push_back(normal(c));
  auto near = config::closest_match(normal(word), normals);
  if (!near) return std::nullopt;
  return candidates[size_t(std::find(normals.begin(), normals.end(), *near) - normals.begin())];
}

// The chosen subcommand's parser, or `app` itself.
const CLI::App& parsed_command(const CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands())
    if (sub->parsed()) return *sub;
  return app;
}

std::vector<std::string> long_names(const CLI::App& command) {
  std::vector<std::string> names;
  for (const CLI::Option* o : command.get_options())
    for (const std::string& n : o->get_lnames()) names.push_back(n);
  return names;
}

}  // namespace

std::optional<std::string> suggest_option(const std::string& word, const std::vector<std::string>& candidates) {
  if (auto hinted = from_hints(word, candidates)) return hinted;
  const std::string bare = without_separators(word);
  for (const auto& c : candidates)
    if (without_separators(c) == bare) return c;
  // A near miss within a family of names (lora_rnk: the lora_ options) is one of that family
  // before it is a name of another that happens to be as near (local_rank).
  const std::string family = first_word(word);
  std::vector<std::string> kin;
  for (const auto& c : candidates)
    if (family.size() >= 3 && first_word(c) == family && c.size() > family.size()) kin.push_back(c);
  if (auto near = closest(word, kin)) return near;
  if (auto near = closest(word, candidates)) return near;
  // Cut short, as argparse (the Trainer's parser) would take a unique prefix.
  std::optional<std::string> longest_prefix;
  for (const auto& c : candidates)
    if (bare.size() >= 3 && without_separators(c).rfind(bare, 0) == 0 &&
        (!longest_prefix || c.size() < longest_prefix->size()))
      longest_prefix = c;
  return longest_prefix;
}

std::string unknown_options_message(const CLI::App& app) {
  const CLI::App& command = parsed_command(app);
  const std::vector<std::string> candidates = long_names(command);
  std::string message;
  for (const std::string& arg : command.remaining()) {
    if (arg.size() < 2 || arg[0] != '-' || std::isdigit(static_cast<unsigned char>(arg[1]))) continue;
    const std::string name = arg.substr(0, arg.find('='));
    const std::string word = name.substr(name.find_first_not_of('-'));
    const auto suggestion = suggest_option(word, candidates);
    message += fmt::format("{}{}: unknown option{}", message.empty() ? "" : "\n", name,
                           suggestion ? "; did you mean --" + *suggestion + "?" : "");
  }
  return message;
}

}  // namespace zt::cli
