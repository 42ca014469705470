#pragma once
// One record of a data file (a line of JSONL, an element of a JSON array) as a document: plain
// text, or a conversation in one of the layouts fine-tuning data comes in.
//
//   {"text": "..."}                                          plain text
//   {"messages": [{"role": "user", "content": "..."}, ...]}  OpenAI / Hugging Face chat
//     (an assistant message may carry "reasoning_content")
//   {"conversations": [{"from": "human", "value": "..."}, ...]}  ShareGPT (human/user, gpt/assistant,
//     system)
//   {"instruction": "...", "input": "...", "output": "...", "system": "...", "history": [[q, a], ...]}
//     Alpaca (the user's turn is the instruction, then the input on the next line when there is one;
//     history holds earlier turns)
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "tokenizer/chat_format.hpp"

namespace zt {

struct Document {
  bool chat = false;
  std::string text;                    // plain text
  std::vector<ChatMessage> messages;  // a conversation, with at least one assistant answer
};

// Fails (zt::Error) naming the field that is missing or of the wrong type; the caller adds the file
// and line.
Document document_of_record(const nlohmann::json& record);

}  // namespace zt
