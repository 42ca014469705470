#pragma once
// One pattern for every subcommand of the command line: a function adds the subcommand and its
// options to the parser and returns what runs when it was chosen. Parsing lives here in app/;
// the work is one call into lib/.
#include <CLI/CLI.hpp>

#include <functional>
#include <string>

#include "core/exit_status.hpp"

namespace zt::cli {

struct Subcommand {
  CLI::App* command = nullptr;                     // its parser: chosen when command->parsed()
  std::function<int(int argc, char** argv)> run;   // the exit status
};

Subcommand train_subcommand(CLI::App& app);  // the default: `zerotrain [options]` trains
Subcommand estimate_subcommand(CLI::App& app);
Subcommand export_subcommand(CLI::App& app);
Subcommand plot_subcommand(CLI::App& app);
Subcommand tokenize_subcommand(CLI::App& app);
Subcommand generate_subcommand(CLI::App& app);
Subcommand eval_subcommand(CLI::App& app);

// One "error: " line per line of `message` on stderr; returns kExitBadInput.
int usage_error(const std::string& message);

}  // namespace zt::cli
