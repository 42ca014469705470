// Placeholder until the tokenize room lands: wraps the library's parser.
#include <memory>

#include "subcommand.hpp"
#include "tokenizer/tokenize_command.hpp"

namespace zt::cli {

Subcommand tokenize_subcommand(CLI::App& app) {
  auto cmd = std::make_shared<TokenizeCommand>(app);
  return {app.get_subcommand("tokenize"), [cmd](int, char**) { return cmd->run(); }};
}

}  // namespace zt::cli
