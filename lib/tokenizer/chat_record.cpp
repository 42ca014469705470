#include "tokenizer/chat_record.hpp"

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

std::vector<ChatMessage> openai_messages(const json& list) {
  if (!list.is_array()) fail("messages: expected an array, got {}", list.type_name());
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = fmt::format("messages[{}]", i);
    if (!list[i].is_object()) fail("{}: expected an object with role and content", where);
    ChatMessage m{string_field(list[i], "role", where), string_field(list[i], "content", where), std::nullopt};
    if (auto r = list[i].find("reasoning_content"); r != list[i].end() && !r->is_null()) {
      if (!r->is_string()) fail("{}.reasoning_content: expected a string", where);
      m.reasoning = r->get<std::string>();
    }
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<ChatMessage> sharegpt_messages(const json& list) {
  if (!list.is_array()) fail("conversations: expected an array, got {}", list.type_name());
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = fmt::format("conversations[{}]", i);
    if (!list[i].is_object()) fail("{}: expected an object with from and value", where);
    const std::string from = string_field(list[i], "from", where);
    std::string role = from == "human" || from == "user" ? "user"
                       : from == "gpt" || from == "assistant" ? "assistant"
                       : from == "system" ? "system"
                                          : "";
    if (role.empty()) fail("{}.from: \"{}\" is none of human, user, gpt, assistant, system", where, from);
    out.push_back({role, string_field(list[i], "value", where), std::nullopt});
  }
  return out;
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
