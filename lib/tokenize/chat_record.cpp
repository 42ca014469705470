#include "tokenize/chat_record.hpp"

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace zt {
namespace {

using nlohmann::json;

std::string string_field(const json& object, const char* key, const std::string& where) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_string())
    fail("{}.{}: {}", where, key, it == object.end() ? "missing" : "expected a string, got " + std::string(it->type_name()));
  return it->get<std::string>();
}

// A list of message objects, each with `fields`, made into messages by message_of(object, where).
template <class MessageOf>
std::vector<ChatMessage> each_message(const json& list, const char* name, const char* fields, MessageOf message_of) {
  if (!list.is_array()) fail("{}: expected an array, got {}", name, list.type_name());
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = fmt::format("{}[{}]", name, i);
    if (!list[i].is_object()) fail("{}: expected an object with {}", where, fields);
    out.push_back(message_of(list[i], where));
  }
  return out;
}

std::vector<ChatMessage> openai_messages(const json& list) {
  return each_message(list, "messages", "role and content", [](const json& object, const std::string& where) {
    ChatMessage m{string_field(object, "role", where), string_field(object, "content", where), std::nullopt};
    if (auto r = object.find("reasoning_content"); r != object.end() && !r->is_null()) {
      if (!r->is_string()) fail("{}.reasoning_content: expected a string", where);
      m.reasoning = r->get<std::string>();
    }
    return m;
  });
}

std::vector<ChatMessage> sharegpt_messages(const json& list) {
  return each_message(list, "conversations", "from and value", [](const json& object, const std::string& where) {
    const std::string from = string_field(object, "from", where);
    std::string role = from == "human" || from == "user" ? "user"
                       : from == "gpt" || from == "assistant" ? "assistant"
                       : from == "system" ? "system"
                                          : "";
    if (role.empty()) fail("{}.from: \"{}\" is none of human, user, gpt, assistant, system", where, from);
    return ChatMessage{role, string_field(object, "value", where), std::nullopt};
  });
}

std::vector<ChatMessage> alpaca_messages(const json& record) {
  std::vector<ChatMessage> out;
  if (auto s = record.find("system"); s != record.end() && !s->is_null())
    out.push_back({"system", string_field(record, "system", "record"), std::nullopt});
  if (auto h = record.find("history"); h != record.end() && !h->is_null()) {
    if (!h->is_array()) fail("history: expected an array of [question, answer] pairs");
    for (size_t i = 0; i < h->size(); ++i) {
      const json& turn = (*h)[i];
      if (!turn.is_array() || turn.size() != 2 || !turn[0].is_string() || !turn[1].is_string())
        fail("history[{}]: expected [question, answer]", i);
      out.push_back({"user", turn[0].get<std::string>(), std::nullopt});
      out.push_back({"assistant", turn[1].get<std::string>(), std::nullopt});
    }
  }
  std::string question = string_field(record, "instruction", "record");
  if (auto in = record.find("input"); in != record.end() && !in->is_null()) {
    const std::string input = string_field(record, "input", "record");
    if (!input.empty()) question += "\n" + input;
  }
  out.push_back({"user", question, std::nullopt});
  out.push_back({"assistant", string_field(record, "output", "record"), std::nullopt});
  return out;
}

}  // namespace

Document document_of_record(const json& record) {
  if (!record.is_object()) fail("expected a JSON object, got {}", record.type_name());
  Document d;
  if (auto t = record.find("text"); t != record.end()) {
    if (!t->is_string()) fail("text: expected a string, got {}", t->type_name());
    d.text = t->get<std::string>();
    return d;
  }
  d.chat = true;
  if (auto m = record.find("messages"); m != record.end())
    d.messages = openai_messages(*m);
  else if (auto c = record.find("conversations"); c != record.end())
    d.messages = sharegpt_messages(*c);
  else if (record.contains("instruction") || record.contains("output"))
    d.messages = alpaca_messages(record);
  else
    fail("no \"text\", \"messages\", \"conversations\" or \"instruction\"/\"output\" field");
  bool answered = false;
  for (const ChatMessage& m : d.messages) answered |= m.role == "assistant";
  if (!answered) fail("the conversation has no assistant message: nothing to train on");
  return d;
}

}  // namespace zt
