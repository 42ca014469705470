#pragma once
// The messages of a record (chat_record.hpp): roles by their aliases, tool calls and results, the
// loss flags; `where` names the list in messages ("messages", "conversations", "prompt").
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tokenizer/chat_format.hpp"

namespace zt {

// How each message names its role and text: {"role", "content"} or ShareGPT's {"from", "value"}.
struct MessageKeys {
  const char* role;
  const char* content;
};

constexpr MessageKeys kOpenAi{"role", "content"};
constexpr MessageKeys kShareGpt{"from", "value"};

std::vector<ChatMessage> read_messages(const nlohmann::ordered_json& list, const std::string& where, MessageKeys keys);
// One message; `where` names it.
ChatMessage read_message(const nlohmann::ordered_json& object, const std::string& where, MessageKeys keys);
// Alpaca's question with the turns before it: the history's questions and answers, then the
// instruction with the input on the next line when there is one (LLaMA-Factory's reading).
std::vector<ChatMessage> alpaca_prompt(const nlohmann::ordered_json& record);
// A record's own "system" field (ShareGPT's and Alpaca's), when it has one, as the first message.
void add_system_field(const nlohmann::ordered_json& record, std::vector<ChatMessage>& messages);
// "tools": a list of function signatures, or a string holding one; none when absent or null.
std::vector<nlohmann::ordered_json> read_tools(const nlohmann::ordered_json& record);
// A string field; `where` names the object.
std::string string_field(const nlohmann::ordered_json& object, const char* key, const std::string& where);

}  // namespace zt
