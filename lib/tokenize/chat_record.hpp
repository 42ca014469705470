#pragma once
// One record of a data file (a line of JSONL, an element of a JSON array) as a document: plain
// text, a conversation in one of the layouts fine-tuning data comes in, a prompt and its
// completion, or tokens already made.
//
//   {"text": "..."}                                          plain text
//   {"messages": [{"role": "user", "content": "..."}, ...], "tools": [...]}  OpenAI / Hugging Face
//     chat: an assistant message may carry "reasoning_content" and "tool_calls" ([{"function":
//     {"name", "arguments"}}] or [{"name", "arguments"}]); tool results are "tool" messages
//   {"conversations": [{"from": "human", "value": "..."}, ...], "system": "...", "tools": ...}
//     ShareGPT
//   {"instruction": "...", "input": "...", "output": "...", "system": "...", "history": [[q, a], ...]}
//     Alpaca (the user's turn is the instruction, then the input on the next line when there is one;
//     history holds earlier turns)
//   {"prompt": "...", "completion": "..."}                   text and its completion (TRL's standard
//     prompt-completion: no template; the completion and the end-of-text token count)
//   {"prompt": [messages], "completion": [messages]}         TRL's conversational prompt-completion:
//     a conversation whose prompt messages never count
//   {"input_ids": [...], "labels": [...], "attention_mask": [...]}  tokens already made (axolotl's
//     pre-tokenized rows): labels -100 for the tokens that do not count, attention_mask 0 for padding
//
// Roles, in either key ("role" or "from"), as ShareGPT, LLaMA-Factory and ms-swift spell them:
// user/human; assistant/gpt/bot/model; system/developer (OpenAI's name for it);
// tool/observation/function/tool_response/ipython for a tool's result; function_call/tool_call for
// an assistant's call, its content the call as JSON ({"name", "arguments"} or a list of them),
// joined to the assistant message just before it.
// "tools" may be a list or a string holding one (LLaMA-Factory). Each message may carry "loss":
// true or false (ms-swift's flag): whether that assistant answer counts, whatever --train-on says.
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/name_table.hpp"
#include "tokenizer/chat_format.hpp"

namespace zt {

// Which assistant answers count where the messages do not say: every one, or the last only.
enum class TrainOn { All, Last };
inline constexpr auto kTrainOnNames = name_table<TrainOn>({{TrainOn::All, "all"}, {TrainOn::Last, "last"}});

struct RecordOptions {
  std::optional<std::string> system = {};  // the system message of conversations without one
  TrainOn train_on = TrainOn::All;
};

struct Document {
  enum Kind { Text, Chat, PromptCompletion, Tokens };
  Kind kind = Text;
  std::string text;                 // Text
  Conversation conversation;        // Chat: at least one answer counts
  std::string prompt, completion;   // PromptCompletion
  std::vector<int32_t> ids;         // Tokens: the record's tokens, less padding
  std::vector<uint8_t> counted;     // Tokens: which of them count as targets (never the first)
};

// Fails (zt::Error) naming the field that is missing or of the wrong type; the caller adds the file
// and line.
Document document_of_record(const nlohmann::ordered_json& record, const RecordOptions& options = {});

}  // namespace zt
