#pragma once
// `zerotrain tokenize --tokenizer DIR|FILE INPUT... -o OUT.bin [--val N%] [--chat-format F]`:
// text and chat data to llm.c token files (docs/data.md).
//
// Each input is one or more documents: a text file is one; JSON Lines and JSON arrays hold one per
// record (chat_record.hpp). Every text document is preceded by the tokenizer's separator (its
// begin-of-text token, else its end-of-text token), as llm.c's data scripts write them; a record is
// a sample with the ids apply_chat_template (or TRL, for a prompt and its completion) gives it, no
// separator; a conversation is rendered in the chat format (tokenizer/chat_format.hpp) and only its
// answers count as targets:
// with any record (a conversation, a prompt and completion, tokens already made) in the input,
// OUT.mask says which tokens count and OUT.idx where each document starts: they train as samples
// (docs/data.md, "Samples"). --val N% moves a seeded sample of N% of the documents (records) to
// OUT.val.bin, whole; with too few documents for that (one text file), the last N% of the tokens.
// Preference records (a prompt, the answer chosen and the one rejected: preference_record.hpp) make a
// file of pairs: two samples each, prompt + chosen then prompt + rejected, with TRL's ids, the
// answers counted, and an index of pairs (llmc::kPairIndexMagic); every input must then hold them,
// each file in one form, and --val moves whole pairs.
// Worker threads encode jobs of about a megabyte; the output is the same for any number of threads.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zt {

struct TokenizeOptions {
  std::string tokenizer;
  std::vector<std::string> inputs;
  std::string output;
  std::string val;          // "N%": N% of the documents (a seeded sample) go to OUT.val.bin
  std::string chat_format;  // chat_format_names(); empty: the tokenizer's (its chat template, else its special tokens)
  std::optional<std::string> system;  // the system message of conversations without one
  std::string train_on = "all";       // which answers count where the messages do not say: all | last
  bool skip_invalid = false;          // bad records are counted and left out instead of failing
  int threads = 0;          // 0: one per core
  bool quiet = false;       // no progress and no summary
  size_t job_bytes = size_t(1) << 20;  // input per job (whole lines, or a text cut where it may be)
  uint64_t seed = 1234;     // which documents --val takes
};

struct TokenizeSummary {
  int64_t documents = 0, chats = 0, tokens = 0, counted = 0, val_tokens = 0;
  int64_t skipped = 0;                    // bad records left out (--skip-invalid)
  std::vector<std::string> skipped_first;  // the first kSkippedListed of them: where, and what was wrong
  int64_t val_documents = 0;  // documents --val moved (0: it moved the last tokens instead)
  int64_t sample_records = 0;  // conversations, prompt-completions and tokens: they make the files samples
  int64_t pairs = 0;           // preference pairs (two samples, two documents each)
  std::string pair_forms;      // the forms of the pairs' files, for the summary
  bool samples = false;       // the files keep where their documents start (OUT.idx)
  uint64_t bytes = 0;
  std::string separator;
};

// Fails (zt::Error) on bad input: the file and line, or the option, and what is wrong. Writes
// nothing unless everything was read.
TokenizeSummary run_tokenize(const TokenizeOptions& options);

}  // namespace zt
