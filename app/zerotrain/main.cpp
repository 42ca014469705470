// zerotrain: the command line. Each subcommand parses its options (subcommand.hpp) and calls lib/.
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "core/threads.hpp"
#include "subcommand.hpp"
#include "unknown_options.hpp"

#ifndef ZT_VERSION
#define ZT_VERSION "unknown"
#endif

int main(int argc, char** argv) {
  zt::exec_with_passive_openmp_wait(argv);  // idle OpenMP threads sleep: core/threads.hpp
  CLI::App app{
      "zerotrain: training of GPT-2, Llama, Mistral, Qwen2, Qwen3, Gemma 2, Gemma 3 and the mixtures of experts "
      "Qwen3-MoE, Qwen2-MoE, Mixtral and OLMoE with ZeRO stages 0-3 "
      "(DeepSpeed configs), on CPUs or NVIDIA GPUs, one process alone or many over MPI"};
  app.set_version_flag("--version", std::string("zerotrain ") + ZT_VERSION);
  app.require_subcommand(0, 1);
  using namespace zt::cli;
  const Subcommand train = train_subcommand(app);
  const std::vector<Subcommand> subcommands = {estimate_subcommand(app), export_subcommand(app),
                                               plot_subcommand(app),     tokenize_subcommand(app),
                                               generate_subcommand(app), eval_subcommand(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ExtrasError& err) {
    const std::string unknown = unknown_options_message(app);
    return usage_error((unknown.empty() ? std::string(err.what()) : unknown) + " (run with --help for usage)");
  } catch (const CLI::ParseError& err) {
    if (err.get_exit_code() == 0) return app.exit(err);  // --help, --version
    return usage_error(std::string(err.what()) + " (run with --help for usage)");
  }
  for (const Subcommand& s : subcommands)
    if (s.command->parsed()) return s.run(argc, argv);
  return train.run(argc, argv);
}
