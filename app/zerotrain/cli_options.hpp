#pragma once
// What the subcommands' parsers share: their option types and checks.
#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <string>

#include "core/log.hpp"

namespace zt::cli {

// A positive integer option. CLI::PositiveNumber would report "Value 0 not in range 2.22507e-308 to
// 1.79769e+308"; this says what the option takes: "--steps: must be a positive integer, got 0".
CLI::Validator positive_int();
CLI::Validator positive_int64();

// "5GB", "500MB", "2GiB", or bytes (--max-shard-size).
CLI::Validator byte_size();

// --model (required), --device (cpu, cuda or auto, as training.device chooses) and --dtype (fp32
// or bf16, what the model computes in on a GPU): generate and eval.
void add_model_options(CLI::App& command, std::string& model, std::string& device, std::string& dtype);

// --tokenizer-mismatch error|warn: what a token file or tokenizer of another tokenizer than the
// model's gets (data.tokenizer_mismatch of a run): generate and eval.
void add_tokenizer_mismatch_option(CLI::App& command, std::string& policy);

LogOptions log_options(int rank, const std::string& level, const std::string& dir = "");

// A subcommand's parser and the options CLI11 writes into while parsing (shared with its run).
template <typename Options>
struct Parsed {
  CLI::App* command;
  std::shared_ptr<Options> options;
};
template <typename Options>
Parsed<Options> add_command(CLI::App& app, const char* name, const char* description, const char* footer) {
  CLI::App* command = app.add_subcommand(name, description);
  command->footer(footer);
  return {command, std::make_shared<Options>()};
}

// Runs `work`: 0, or 1 with "error: COMMAND: what went wrong" on stderr; with bad_input_status, 2
// for bad input (zt::BadInput), as a training run and a bad command line give.
int exit_status(const char* command, const std::function<void()>& work, bool bad_input_status = false);

}  // namespace zt::cli
