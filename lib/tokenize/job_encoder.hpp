#pragma once
// One job of `zerotrain tokenize` (input_jobs.hpp) to tokens: each document after the separator,
// text encoded as text, conversations rendered in the chat format with the targets that count.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tokenize/input_jobs.hpp"
#include "tokenizer/chat_format.hpp"

namespace zt {

class Tokenizer;

struct JobContext {
  const Tokenizer& tokenizer;
  const std::vector<DataInput>& inputs;
  int32_t separator;
  std::optional<ChatFormat> chat_format;
  std::string chat_format_problem;  // why there is none, for the message when a conversation comes
  std::string bos_token;            // Llama 3's template starts with it
};

// What a job became.
struct Encoded {
  std::vector<int32_t> tokens;
  std::vector<uint8_t> counted;  // empty while every token counts
  std::vector<int64_t> starts;   // where each document starts in `tokens` (a continued one: nowhere)
  int64_t documents = 0, chats = 0;
};

// Fails (zt::Error) naming the file and line (or array element) and what is wrong.
Encoded encode_job(const InputJob& job, const JobContext& context);

}  // namespace zt
