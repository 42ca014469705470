#pragma once
// What the parser did not expect, said with a suggestion: "--lr: unknown option; did you mean
// --learning_rate?". Near misses of any option of the command (zerotrain's own, the Hugging Face
// Trainer's), spelt with '-' or '_', without separators, cut short, with words left out, or
// another tool's word for the same thing (config/trainer_arguments.hpp's hints).
#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

namespace zt::cli {

// The option of `candidates` (long names without "--") that `word` (without "--") most likely
// meant, if any.
std::optional<std::string> suggest_option(const std::string& word, const std::vector<std::string>& candidates);

// The error lines for the arguments `app` (or the subcommand it chose) did not expect, once its
// parse threw CLI::ExtrasError; empty when none of them is an option.
std::string unknown_options_message(const CLI::App& app);

}  // namespace zt::cli
