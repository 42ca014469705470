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

std::vector<ChatMessage> read_messages(const nlohmann::ordered_json& list, const std::string& where, MessageKeys keys);
// "tools": a list of function signatures, or a string holding one; none when absent or null.
std::vector<nlohmann::ordered_json> read_tools(const nlohmann::ordered_json& record);
// A string field; `where` names the object.
std::string string_field(const nlohmann::ordered_json& object, const char* key, const std::string& where);

}  // namespace zt
