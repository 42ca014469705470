#include "tokenize/tokenize_files.hpp"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <thread>

#include "core/error.hpp"
#include "data/data_files.hpp"
#include "data/index_permutation.hpp"
#include "data/llmc_format.hpp"
#include "data/token_file_writer.hpp"
#include "tokenize/input_jobs.hpp"
#include "tokenize/job_encoder.hpp"
#include "tokenize/ordered_workers.hpp"
#include "tokenize/preference_record.hpp"
#include "tokenizer/chat_format.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/tokenizer_files.hpp"

namespace zt {
namespace {

using Clock = std::chrono::steady_clock;

double parse_val_percent(const std::string& val) {
  if (val.empty()) return 0;
  char* end = nullptr;
  const double p = std::strtod(val.c_str(), &end);
  if (end == val.c_str() || std::string(end) != "%" || !(p > 0 && p < 100))
    refuse("--val {}: expected a percentage of the documents above 0 and below 100, such as 5%", val);
  return p;
}

// OUT.bin, its mask, index and record, then the validation file's when there is one.
std::vector<std::string> output_paths(const std::string& output, const std::string& val_path) {
  std::vector<std::string> outputs;
  for (const std::string& path : {output, val_path})
    if (!path.empty())
      outputs.insert(outputs.end(),
                     {path, llmc::mask_path_of(path), llmc::index_path_of(path), llmc::info_path_of(path)});
  return outputs;
}

// No output may be an input or a file of the tokenizer, however spelt.
void check_outputs(const TokenizeOptions& o, const std::vector<std::string>& outputs) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::string> inputs = o.inputs;
  if (fs::is_directory(o.tokenizer, ec)) {
    for (const auto& entry : fs::directory_iterator(o.tokenizer, ec)) inputs.push_back(entry.path().string());
  } else {
    inputs.push_back(o.tokenizer);
  }
  for (const std::string& out : outputs) {
    for (const std::string& in : inputs)
      if (fs::exists(out, ec) && fs::equivalent(out, in, ec))
        refuse("-o {}: {} would overwrite the input {}", o.output, out, in);
    const fs::path dir = fs::path(out).parent_path();
    if (!dir.empty() && !fs::is_directory(dir, ec))
      refuse("-o {}: the directory {} does not exist", o.output, dir.string());
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
      : total_(total),
        shown_(!quiet && total >= (uint64_t(32) << 20)),
        tty_(::isatty(2)),
        start_(Clock::now()),
        last_(start_) {}
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

// Each input as inspect_input reads it; a name that did not say how is told, and a text file that
// holds JSON records is warned about (it is read as one document, JSON syntax and all).
std::vector<DataInput> inspect_inputs(const std::vector<std::string>& paths, bool quiet, uint64_t& total_bytes) {
  std::vector<DataInput> inputs;
  for (const std::string& path : paths) {
    const DataInput& in = inputs.emplace_back(inspect_input(path));
    total_bytes += in.size;
    if (in.looks_like_records)
      std::fprintf(stderr,
                   "warning: tokenize: %s holds JSON records, but its name makes it text: it is read as one document, "
                   "JSON syntax and all; rename it .jsonl to read its records\n",
                   path.c_str());
    if (in.by_content && in.kind != DataInput::Text && !quiet)
      std::printf("tokenize: %s: %s, told by its content\n", path.c_str(),
                  in.kind == DataInput::JsonLines ? "JSON lines" : "a JSON array of records");
  }
  return inputs;
}

// The chat format: the one named, else the tokenizer's (none is an error only once a conversation
// comes); `told` gets how it was told.
void choose_chat_format(JobContext& context, const std::string& chat_format, std::string& told) {
  const Tokenizer& tokenizer = context.tokenizer;
  if (!chat_format.empty()) {
    context.chat_format = kChatFormatNames.find(chat_format);
    if (!context.chat_format) refuse("--chat-format {}: expected one of {}", chat_format, kChatFormatNames.list(","));
    check_chat_format(*context.chat_format, tokenizer);
    told = "--chat-format";
    return;
  }
  context.chat_format = chat_format_of(tokenizer, &told);
  const std::string unrendered = unrendered_chat_template(tokenizer.config_string("chat_template"));
  if (!unrendered.empty())
    context.chat_format_problem = fmt::format("a conversation, but the tokenizer's chat template ({}) is {}",
                                              tokenizer.source(), unrendered);
  else if (told == "its chat template")
    context.chat_format_problem =
        fmt::format("a conversation, but the tokenizer's chat template ({}) is none of the formats zerotrain renders: "
                    "name one with --chat-format ({})", tokenizer.source(), kChatFormatNames.list(","));
  else
    context.chat_format_problem =
        fmt::format("a conversation, but the tokenizer ({}) has no chat template or chat tokens to tell its format by: "
                    "name one with --chat-format ({})", tokenizer.source(), kChatFormatNames.list(","));
  told = "told by " + told;
}

// Each input's form of records (its first record's); preference pairs and other data do not mix in
// one output: every input holds pairs or none does. `forms` gets the pairs' forms, for the summary.
std::vector<FileForm> file_forms(const std::vector<DataInput>& inputs, std::string& forms) {
  std::vector<FileForm> out;
  std::optional<size_t> pairs, other;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const FileForm& f = out.emplace_back(preference_form_of_file(inputs[i]));
    if (f.form == PreferenceForm::None) {
      if (!other) other = i;
      continue;
    }
    if (!pairs) pairs = i;
    const std::string name(preference_form_name(f.form));
    if (forms.find(name) == std::string::npos) forms += (forms.empty() ? "" : ", ") + name;
  }
  if (pairs && other)
    refuse("{} holds preference pairs ({}, told by {}), but {} holds {}: pairs and other data are not tokenized into "
         "one file",
         inputs[*pairs].path, preference_form_name(out[*pairs].form), out[*pairs].where, inputs[*other].path,
         inputs[*other].kind == DataInput::Text ? "text" : "other records");
  return out;
}

// The separator, the end of a completion, the chat format and what the options say of records.
JobContext job_context(const Tokenizer& tokenizer, const std::vector<DataInput>& inputs, const TokenizeOptions& o,
                       std::string& separator_name, std::string& format_told) {
  JobContext context{
      .tokenizer = tokenizer, .inputs = inputs, .separator = document_separator(tokenizer, separator_name)};
  context.chat_options = {.bos_token = chat_bos_token(tokenizer), .eos_token = chat_eos_token(tokenizer)};
  const AddedToken* eos = tokenizer.added_tokens().by_content(tokenizer.config_string("eos_token"));
  context.end_of_text = eos ? eos->id : context.separator;
  const auto train_on = kTrainOnNames.find(o.train_on);
  if (!train_on) refuse("--train-on {}: expected {}", o.train_on, kTrainOnNames.list());
  context.record_options = {o.system, *train_on};
  context.skip_invalid = o.skip_invalid;
  choose_chat_format(context, o.chat_format, format_told);
  // A template that writes the assistant's header without add_generation_prompt in it writes it always.
  const std::string& chat_template = tokenizer.config_string("chat_template");
  context.template_prompts_always =
      chat_template.find("add_generation_prompt") == std::string::npos &&
      (chat_template.find("assistant<|end_header_id|>") != std::string::npos ||
       chat_template.find("<|im_start|>assistant") != std::string::npos);
  return context;
}

int64_t counted_tokens(const Encoded& e) {
  return e.counted.empty() ? int64_t(e.tokens.size())
                           : int64_t(std::count(e.counted.begin(), e.counted.end(), uint8_t(1)));
}

// Workers encode jobs; this thread reads the next ones and writes the results in job order.
void encode_in_order(JobReader& reader, const JobContext& context, int threads, Progress& progress,
                     TokenFileWriter& writer, TokenizeSummary& summary) {
  run_ordered<InputJob, Encoded>(
      threads,
      [&] {
        progress.update(reader.bytes_read(), writer.tokens());
        return reader.next();
      },
      [&](const InputJob& job) { return encode_job(job, context); },
      [&](Encoded e) {
        writer.append(e.tokens, e.counted, e.starts);
        summary.documents += e.documents;
        summary.chats += e.chats;
        summary.sample_records += e.sample_records;
        summary.pairs += e.pairs;
        for (std::string& s : e.skipped_first)
          if (summary.skipped_first.size() < kSkippedListed) summary.skipped_first.push_back(std::move(s));
        summary.skipped += e.skipped;
        summary.counted += counted_tokens(e);
      });
  progress.done();
}

int64_t val_tokens_of(int64_t tokens, double val_percent, const std::string& val) {
  const int64_t val_tokens = std::llround(double(tokens) * val_percent / 100.0);
  if (val_tokens < 1 || val_tokens >= tokens)
    refuse("--val {}: {} tokens in all leave {} for validation and {} for training: both need some", val, tokens,
         val_tokens, tokens - val_tokens);
  return val_tokens;
}

// What finish() writes: the files of samples when records came (conversations, prompt-completions,
// tokens already made), and the validation split: a seeded sample of whole documents, or with too
// few documents for one (a text file) the last tokens. Record data (samples) is never cut inside a
// record.
TokenFileWriter::Outputs outputs_of(const TokenizeOptions& o, double val_percent, const std::string& val_path,
                                    const TokenFileWriter& writer, TokenizeSummary& summary) {
  TokenFileWriter::Outputs out;
  out.samples = summary.samples = summary.sample_records > 0;
  out.pairs = summary.pairs > 0;
  if (val_percent <= 0) return out;
  out.val_path = val_path;
  // A pair's two samples go together: the choice is made among pairs.
  const int per_record = out.pairs ? 2 : 1;
  const int64_t records = writer.documents() / per_record;
  const int64_t val_records = std::llround(double(records) * val_percent / 100.0);
  if (val_records >= 1 && val_records < records) {
    const IndexPermutation order(uint64_t(records), o.seed);
    out.val_documents = [order, val_records, per_record](int64_t d) {
      return int64_t(order(uint64_t(d / per_record))) < val_records;
    };
    summary.val_documents = val_records * per_record;
  } else if (out.samples) {
    refuse("--val {}: {} {} in all leave {} for validation and {} for training: both need some, and a {} is never "
           "split",
           o.val, records, out.pairs ? "pairs" : "records", val_records, records - val_records,
           out.pairs ? "pair" : "record");
  } else {
    out.val_tail_tokens = val_tokens_of(summary.tokens, val_percent, o.val);
  }
  return out;
}

std::string plural(int64_t n, const char* what) { return fmt::format("{} {}{}", n, what, n == 1 ? "" : "s"); }

void print_encoding(const TokenizeSummary& summary, size_t files, const JobContext& context,
                    const std::string& format_told, int threads, double load_s, double encode_s) {
  std::string chats;
  if (summary.pairs > 0)
    chats = fmt::format(" ({} samples: {}{})", summary.documents, summary.pair_forms,
                        summary.chats > 0 ? fmt::format("; {} format, {}", kChatFormatNames.name(*context.chat_format),
                                                        format_told)
                                          : "");
  else if (summary.chats > 0)
    chats = fmt::format(" ({}, {} format, {})", plural(summary.chats, "chat"),
                        kChatFormatNames.name(*context.chat_format), format_told);
  // The separator goes before text only: records are samples without it.
  std::string separator;
  if (summary.documents > summary.sample_records)
    separator = fmt::format(", each {}after {} ({})", summary.sample_records > 0 ? "text " : "", summary.separator,
                            context.separator);
  std::printf("tokenize: %s, %s%s, %s in %.1f s (%s/s on %s; the tokenizer loaded in %.1f s)%s\n",
              plural(int64_t(files), "file").c_str(),
              summary.pairs > 0 ? plural(summary.pairs, "preference pair").c_str()
                                : plural(summary.documents, "document").c_str(),
              chats.c_str(),
              human_bytes(double(summary.bytes)).c_str(), encode_s,
              human_bytes(double(summary.bytes) / std::max(encode_s, 1e-9)).c_str(), plural(threads, "thread").c_str(),
              load_s, separator.c_str());
  if (summary.skipped == 0) return;
  std::printf("tokenize: skipped %s (--skip-invalid):\n", plural(summary.skipped, "invalid record").c_str());
  for (const std::string& s : summary.skipped_first) std::printf("  %s\n", s.c_str());
  if (const int64_t rest = summary.skipped - int64_t(summary.skipped_first.size()); rest > 0)
    std::printf("  and %lld more\n", static_cast<long long>(rest));
}

void print_files(const std::vector<TokenFileWriter::File>& files, const TokenFileWriter& writer,
                 const TokenizerIdentity& tokenizer, const TokenizeSummary& summary, const TokenizeOptions& o) {
  const bool pairs = summary.pairs > 0;
  for (const auto& f : files) {
    std::string index;
    if (!f.index_path.empty())
      index = pairs ? fmt::format(", {} ({} samples) {}", plural(f.samples / 2, "pair"), f.samples, f.index_path)
                    : fmt::format(", {} {}", plural(f.samples, "sample"), f.index_path);
    std::printf("wrote %s: %lld tokens (%s)%s%s\n", f.path.c_str(), static_cast<long long>(f.tokens),
                writer.token_bytes() == 2 ? "uint16" : "uint32",
                f.mask_path.empty() ? "" : fmt::format(", loss mask {}", f.mask_path).c_str(), index.c_str());
  }
  if (files.size() > 1 && summary.val_documents > 0)
    std::printf("validation: %s of %lld (--val %s, seed %llu), whole, in %s\n",
                pairs ? plural(summary.val_documents / 2, "pair").c_str()
                      : plural(summary.val_documents, summary.samples ? "record" : "document").c_str(),
                static_cast<long long>(pairs ? summary.pairs : summary.documents), o.val.c_str(),
                static_cast<unsigned long long>(o.seed), files[1].path.c_str());
  else if (files.size() > 1)
    std::printf("validation: the last %s of the tokens (--val; %s: no documents to sample), in %s\n", o.val.c_str(),
                plural(summary.documents, "document").c_str(), files[1].path.c_str());
  std::string records;
  for (const auto& f : files) records += (records.empty() ? "" : ", ") + f.info_path;
  std::printf("the tokenizer, recorded in %s: %s\n", records.c_str(), describe(tokenizer).c_str());
  if (writer.masked())
    std::printf("targets that count: %lld of %lld tokens (%.1f%%): %s\n", static_cast<long long>(summary.counted),
                static_cast<long long>(summary.tokens),
                100.0 * double(summary.counted) / double(std::max<int64_t>(summary.tokens, 1)),
                summary.pairs > 0                    ? "the answers chosen and rejected, after their prompts"
                : summary.documents > summary.chats ? "the answers of the conversations and all of the text"
                                                    : "the answers of the conversations");
}

double seconds(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

}  // namespace

TokenizeSummary run_tokenize(const TokenizeOptions& o) {
  const auto start = Clock::now();
  if (o.inputs.empty()) refuse("tokenize: no input files");
  const double val_percent = parse_val_percent(o.val);
  const std::string val_path = val_percent > 0 ? val_file_of(o.output) : "";
  check_outputs(o, output_paths(o.output, val_path));

  TokenizeSummary summary;
  const std::vector<DataInput> inputs = inspect_inputs(o.inputs, o.quiet, summary.bytes);
  std::vector<FileForm> forms = file_forms(inputs, summary.pair_forms);
  const Tokenizer tokenizer = Tokenizer::load(o.tokenizer);
  const auto loaded = Clock::now();
  std::string format_told;
  JobContext context = job_context(tokenizer, inputs, o, summary.separator, format_told);
  context.forms = std::move(forms);

  TokenFileWriter writer(o.output, tokenizer.vocab_size());
  const TokenizerIdentity identity = identify_tokenizer(o.tokenizer, &tokenizer);
  writer.record_tokenizer(identity);
  JobReader reader(inputs, tokenizer, o.job_bytes);
  Progress progress(summary.bytes, o.quiet);
  const int threads = o.threads > 0 ? o.threads : int(std::max(1u, std::thread::hardware_concurrency()));
  encode_in_order(reader, context, threads, progress, writer, summary);

  summary.tokens = writer.tokens();
  const auto files = writer.finish(outputs_of(o, val_percent, val_path, writer, summary));
  if (files.size() > 1) summary.val_tokens = files[1].tokens;
  if (!o.quiet) {
    print_encoding(summary, inputs.size(), context, format_told, threads, seconds(start, loaded),
                   seconds(loaded, Clock::now()));
    print_files(files, writer, identity, summary, o);
  }
  return summary;
}

}  // namespace zt
