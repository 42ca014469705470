#pragma once
// One job of `zerotrain tokenize` (input_jobs.hpp) to tokens: text encoded as text after the
// separator; records as samples without it: conversations rendered in the chat format with the
// targets that count, a prompt and its completion with the completion's, tokens already made as
// they are; preference pairs as two samples each, prompt + chosen then prompt + rejected, with
// the ids TRL's DPOTrainer gives them.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tokenize/chat_record.hpp"
#include "tokenize/input_jobs.hpp"
#include "tokenize/preference_record.hpp"
#include "tokenizer/chat_format.hpp"

namespace zt {

class Tokenizer;

struct JobContext {
  const Tokenizer& tokenizer;
  const std::vector<DataInput>& inputs;
  int32_t separator;
  std::optional<ChatFormat> chat_format = {};
  std::string chat_format_problem = {};  // why there is none, for the message when a conversation comes
  ChatOptions chat_options = {};         // the bos and eos tokens the templates write
  int32_t end_of_text = -1;         // ends a completion (the tokenizer's eos_token, else the separator)
  RecordOptions record_options = {};  // --system, --train-on
  bool skip_invalid = false;        // a bad record is counted and left out instead of failing
  std::vector<FileForm> forms = {};  // each input's form of records: preference pairs, or none
  // The chat template writes the assistant's header after every conversation, asked or not (Llama 3's
  // base template): TRL's prompt + answer ids then end with it.
  bool template_prompts_always = false;
};

// What a job became.
struct Encoded {
  std::vector<int32_t> tokens;
  std::vector<uint8_t> counted;  // empty while every token counts
  std::vector<int64_t> starts;   // where each document starts in `tokens` (a continued one: nowhere)
  int64_t documents = 0, chats = 0;
  int64_t sample_records = 0;  // records that train as samples: conversations, prompt-completions, tokens
  // Preference pairs, two samples each: documents and sample_records count both, chats a pair of
  // conversations once.
  int64_t pairs = 0;
  int64_t skipped = 0;                    // bad records left out (skip_invalid)
  std::vector<std::string> skipped_first;  // the first kSkippedListed of them: where, and what was wrong
};

// How many skipped records are named one by one; the rest are counted.
constexpr size_t kSkippedListed = 20;

// Fails (zt::Error) naming the file and line (or array element) and what is wrong; with
// skip_invalid, a record that cannot be read or rendered is counted instead. A record of another form
// than its file's first record (a preference pair among other records, or the other way round, or
// pairs of two forms) fails whatever skip_invalid says.
Encoded encode_job(const InputJob& job, const JobContext& context);

}  // namespace zt
