#include "tokenizer/tokenize_command.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <thread>

#include "core/error.hpp"
#include "data/llmc_format.hpp"
#include "data/token_file_writer.hpp"
#include "tokenizer/chat_format.hpp"
#include "tokenizer/input_jobs.hpp"
#include "tokenizer/job_encoder.hpp"
#include "tokenizer/ordered_workers.hpp"
#include "tokenizer/tokenizer.hpp"

namespace zt {
namespace {

using Clock = std::chrono::steady_clock;

double parse_val_percent(const std::string& val) {
  if (val.empty()) return 0;
  char* end = nullptr;
  const double p = std::strtod(val.c_str(), &end);
  if (end == val.c_str() || std::string(end) != "%" || !(p > 0 && p < 100))
    fail("--val {}: expected a percentage of the tokens above 0 and below 100, such as 5%", val);
  return p;
}

std::string val_path_of(const std::string& output) {
  if (output.size() > 4 && output.compare(output.size() - 4, 4, ".bin") == 0)
    return output.substr(0, output.size() - 4) + ".val.bin";
  return output + ".val";
}

// No output may be an input, however spelt.
void check_outputs(const TokenizeOptions& o, const std::vector<std::string>& outputs) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const std::string& out : outputs) {
    for (const std::string& in : o.inputs)
      if (fs::exists(out, ec) && fs::equivalent(out, in, ec))
        fail("-o {}: {} would overwrite the input {}", o.output, out, in);
    const fs::path dir = fs::path(out).parent_path();
    if (!dir.empty() && !fs::is_directory(dir, ec)) fail("-o {}: the directory {} does not exist", o.output, dir.string());
  }
}

std::string human_bytes(double b) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (b >= 1000 && u < 4) b /= 1000, ++u;
  return fmt::format("{:.1f} {}", b, units[u]);
}

// A progress line on stderr for big inputs: in place on a terminal, else every 10 seconds.
class Progress {
public:
  Progress(uint64_t total, bool quiet)
      : total_(total), shown_(!quiet && total >= (uint64_t(32) << 20)), tty_(::isatty(2)), start_(Clock::now()), last_(start_) {}
  void update(uint64_t bytes, int64_t tokens) {
    if (!shown_) return;
    const auto now = Clock::now();
    if (now - last_ < std::chrono::seconds(tty_ ? 1 : 10)) return;
    last_ = now;
    const double s = std::chrono::duration<double>(now - start_).count();
    const double rate = double(bytes) / std::max(s, 1e-9);
    const double left = rate > 0 ? double(total_ - std::min(bytes, total_)) / rate : 0;
    std::fprintf(stderr, "%stokenize: %s of %s (%.0f%%), %s/s, %lld tokens, %.0f s left%s", tty_ ? "\r" : "",
                 human_bytes(double(bytes)).c_str(), human_bytes(double(total_)).c_str(),
                 100.0 * double(bytes) / double(std::max<uint64_t>(total_, 1)), human_bytes(rate).c_str(),
                 static_cast<long long>(tokens), left, tty_ ? "\x1b[K" : "\n");
    std::fflush(stderr);
  }
  ~Progress() { done(); }
  void done() {
    if (shown_ && tty_) std::fprintf(stderr, "\r\x1b[K");
    shown_ = false;
  }

private:
  uint64_t total_;
  bool shown_, tty_;
  Clock::time_point start_, last_;
};

}  // namespace

TokenizeSummary run_tokenize(const TokenizeOptions& o) {
  const auto start = Clock::now();
  if (o.inputs.empty()) fail("tokenize: no input files");
  const double val_percent = parse_val_percent(o.val);
  const std::string val_path = val_percent > 0 ? val_path_of(o.output) : "";
  std::vector<std::string> outputs = {o.output, llmc::mask_path_of(o.output)};
  if (!val_path.empty()) outputs.insert(outputs.end(), {val_path, llmc::mask_path_of(val_path)});
  check_outputs(o, outputs);

  std::vector<DataInput> inputs;
  uint64_t total = 0;
  for (const std::string& path : o.inputs) {
    inputs.push_back(inspect_input(path));
    total += inputs.back().size;
  }
  const Tokenizer tokenizer = Tokenizer::load(o.tokenizer);
  const auto loaded = Clock::now();
  TokenizeSummary summary;
  JobContext context{tokenizer, inputs, document_separator(tokenizer, summary.separator), std::nullopt, "", ""};
  context.bos_token = tokenizer.config_string("bos_token").empty() ? "<|begin_of_text|>" : tokenizer.config_string("bos_token");
  if (!o.chat_format.empty()) {
    context.chat_format = chat_format_from_name(o.chat_format);
    if (!context.chat_format) fail("--chat-format {}: expected chatml, qwen3 or llama3", o.chat_format);
    check_chat_format(*context.chat_format, tokenizer);
  } else {
    context.chat_format = chat_format_of(tokenizer);
    context.chat_format_problem = fmt::format(
        "a conversation, but the tokenizer ({}) has no chat tokens to tell its format by: name one with --chat-format "
        "(chatml, qwen3, llama3)", tokenizer.source());
  }

  TokenFileWriter writer(o.output, tokenizer.vocab_size());
  JobReader reader(inputs, tokenizer, o.job_bytes);
  Progress progress(total, o.quiet);

  // Workers encode jobs; this thread reads the next ones and writes the results in job order.
  const int threads = o.threads > 0 ? o.threads : int(std::max(1u, std::thread::hardware_concurrency()));
  run_ordered<InputJob, Encoded>(
      threads,
      [&] {
        progress.update(reader.bytes_read(), writer.tokens());
        return reader.next();
      },
      [&](const InputJob& job) { return encode_job(job, context); },
      [&](Encoded e) {
        writer.append(e.tokens, e.counted);
        summary.documents += e.documents;
        summary.chats += e.chats;
        summary.counted += e.counted.empty() ? int64_t(e.tokens.size())
                                             : int64_t(std::count(e.counted.begin(), e.counted.end(), uint8_t(1)));
      });
  progress.done();

  summary.tokens = writer.tokens();
  summary.bytes = total;
  if (val_percent > 0) {
    summary.val_tokens = std::llround(double(summary.tokens) * val_percent / 100.0);
    if (summary.val_tokens < 1 || summary.val_tokens >= summary.tokens)
      fail("--val {}: {} tokens in all leave {} for validation and {} for training: both need some", o.val,
           summary.tokens, summary.val_tokens, summary.tokens - summary.val_tokens);
  }
  const auto files = writer.finish(val_path, summary.val_tokens);
  if (!o.quiet) {
    const double s = std::chrono::duration<double>(Clock::now() - loaded).count();
    const double load_s = std::chrono::duration<double>(loaded - start).count();
    auto plural = [](int64_t n, const char* what) { return fmt::format("{} {}{}", n, what, n == 1 ? "" : "s"); };
    std::string chats;
    if (summary.chats > 0)
      chats = fmt::format(" ({}, {} format)", plural(summary.chats, "chat"), chat_format_name(*context.chat_format));
    std::printf("tokenize: %s, %s%s, %s in %.1f s (%s/s on %s; the tokenizer loaded in %.1f s), each after "
                "%s (%d)\n",
                plural(int64_t(inputs.size()), "file").c_str(), plural(summary.documents, "document").c_str(),
                chats.c_str(), human_bytes(double(total)).c_str(), s,
                human_bytes(double(total) / std::max(s, 1e-9)).c_str(), plural(threads, "thread").c_str(), load_s,
                summary.separator.c_str(),
                context.separator);
    for (const auto& f : files)
      std::printf("wrote %s: %lld tokens (%s)%s\n", f.path.c_str(), static_cast<long long>(f.tokens),
                  writer.token_bytes() == 2 ? "uint16" : "uint32",
                  f.mask_path.empty() ? "" : fmt::format(", loss mask {}", f.mask_path).c_str());
    if (writer.masked())
      std::printf("targets that count: %lld of %lld tokens (%.1f%%): the answers of the conversations%s\n",
                  static_cast<long long>(summary.counted), static_cast<long long>(summary.tokens),
                  100.0 * double(summary.counted) / double(std::max<int64_t>(summary.tokens, 1)),
                  summary.documents > summary.chats ? " and all of the text" : "");
  }
  return summary;
}

TokenizeCommand::TokenizeCommand(CLI::App& app) {
  command_ = app.add_subcommand("tokenize", "text, JSON Lines and chat data to llm.c token files (docs/data.md)");
  command_->footer(R"(Each text file is one document; each record of a .jsonl file (or of a .json array) is one:
{"text": ...} is text; {"messages": [{"role", "content"}...]}, {"conversations": [{"from", "value"}...]}
(ShareGPT) and {"instruction", "input", "output"} (Alpaca) are conversations, rendered in the model's
chat format with the loss on the answers only (OUT.mask beside OUT.bin).

Examples:
  zerotrain tokenize --tokenizer gpt2/ corpus.txt -o corpus.bin --val 5%
  zerotrain tokenize --tokenizer Qwen3-0.6B/ chats.jsonl -o chats.bin
)");
  command_->add_option("--tokenizer", options_.tokenizer,
                       "a directory with tokenizer.json (or vocab.json + merges.txt), or one of those files")
      ->required();
  command_->add_option("INPUT", options_.inputs, "text, .jsonl or .json files")->required();
  command_->add_option("-o,--output", options_.output, "the token file to write (OUT.bin)")->required();
  command_->add_option("--val", options_.val, "N%: the last N% of the tokens go to OUT.val.bin");
  command_->add_option("--chat-format", options_.chat_format,
                       "chatml, qwen3 or llama3 (default: told by the tokenizer's special tokens)");
  command_->add_option("--threads", options_.threads, "worker threads (default: one per core)");
  command_->add_flag("--quiet", options_.quiet, "no progress, no summary");
}

bool TokenizeCommand::parsed() const { return command_->parsed(); }

int TokenizeCommand::run() const {
  try {
    run_tokenize(options_);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: tokenize: %s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace zt
