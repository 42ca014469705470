#include "cli_options.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cstdio>
#include <limits>

#include "core/error.hpp"
#include "data/tokenizer_identity.hpp"
#include "hf/hf_writer.hpp"
#include "subcommand.hpp"

namespace zt::cli {

namespace {

template <typename Int>
CLI::Validator positive_integer() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        Int n = 0;
        const char* end = text.data() + text.size();
        auto [stop, ec] = std::from_chars(text.data(), end, n);
        if (ec == std::errc() && stop == end && n > 0) return "";
        if (ec == std::errc::result_out_of_range && !text.empty() && text[0] != '-')
          return fmt::format("must be a positive integer up to {}, got {}", std::numeric_limits<Int>::max(), text);
        return "must be a positive integer, got " + text;
      },
      "POSITIVE");
}

}  // namespace

CLI::Validator positive_int() { return positive_integer<int>(); }
CLI::Validator positive_int64() { return positive_integer<int64_t>(); }

CLI::Validator byte_size() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        try {
          parse_byte_size(text, "--max-shard-size");
        } catch (const std::exception& e) {
          return e.what();
        }
        return "";
      },
      "SIZE");
}

void add_model_options(CLI::App& command, std::string& model, std::string& device, std::string& dtype) {
  command
      .add_option("--model", model,
                  "a checkpoint directory, a model directory / safetensors file, or a PEFT adapter directory")
      ->required();
  command.add_option("--device", device, "cpu, cuda or auto")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}))
      ->capture_default_str();
  command.add_option("--dtype", dtype,
                     "auto, fp32, bf16 or fp16: the weights rounded to it as a run of that dtype computed with them "
                     "(auto: a checkpoint's run's dtype, fp32 for a model directory); a GPU computes in bf16 or fp32, "
                     "the CPU in fp32")
      ->check(CLI::IsMember({"auto", "fp32", "bf16", "fp16"}))
      ->capture_default_str();
}

void add_tokenizer_mismatch_option(CLI::App& command, std::string& policy) {
  command
      .add_option("--tokenizer-mismatch", policy,
                  "error: refuse a token file or tokenizer made by another tokenizer than the model's (docs/data.md); "
                  "warn: go on")
      ->check(CLI::IsMember(kTokenizerMismatchNames.names()))
      ->capture_default_str();
}

LogOptions log_options(int rank, const std::string& level, const std::string& dir) {
  LogOptions o;
  o.rank = rank;
  o.level = level;
  o.log_dir = dir;
  return o;
}

int exit_status(const char* command, const std::function<void()>& work, bool bad_input_status) {
  try {
    work();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s: %s\n", command, e.what());
    return bad_input_status && dynamic_cast<const BadInput*>(&e) ? kExitBadInput : kExitFailed;
  }
  return 0;
}

int usage_error(const std::string& message) {
  for (size_t start = 0; start <= message.size();) {
    size_t end = message.find('\n', start);
    if (end == std::string::npos) end = message.size();
    std::fprintf(stderr, "error: %.*s\n", int(end - start), message.data() + start);
    start = end + 1;
  }
  return kExitBadInput;
}

}  // namespace zt::cli
