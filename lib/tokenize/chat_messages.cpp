#include "tokenize/chat_messages.hpp"

#include "core/error.hpp"

namespace zt {
namespace {

using json = nlohmann::ordered_json;

struct RoleAlias {
  const char* name;
  const char* role;  // "tool_call": an assistant's call
};
constexpr RoleAlias kRoles[] = {
    {"user", "user"},           {"human", "user"},          {"assistant", "assistant"},
    {"gpt", "assistant"},       {"bot", "assistant"},       {"model", "assistant"},
    {"system", "system"},       {"developer", "system"},    {"tool", "tool"},
    {"observation", "tool"},    {"function", "tool"},       {"tool_response", "tool"},
    {"ipython", "tool"},        {"function_call", "tool_call"}, {"tool_call", "tool_call"}};

std::string role_of(const std::string& name, const std::string& where) {
  for (const RoleAlias& a : kRoles)
    if (name == a.name) return a.role;
  fail("{}: \"{}\" is no role (user, human; assistant, gpt, bot, model; system, developer; tool, observation, "
       "function, tool_response, ipython; function_call, tool_call)",
       where, name);
}

// A call: {"name", "arguments"}, or OpenAI's {"type": "function", "function": {"name", "arguments"}}.
ToolCall tool_call_of(const json& call, const std::string& where) {
  if (!call.is_object()) fail("{}: expected an object with name and arguments, got {}", where, call.type_name());
  if (auto f = call.find("function"); f != call.end() && f->is_object()) return tool_call_of(*f, where + ".function");
  auto arguments = call.find("arguments");
  if (arguments == call.end()) fail("{}.arguments: missing", where);
  return {string_field(call, "name", where), *arguments};
}

std::vector<ToolCall> tool_calls_of(const json& list, const std::string& where) {
  if (list.is_null()) return {};
  if (!list.is_array()) fail("{}: expected a list of calls, got {}", where, list.type_name());
  std::vector<ToolCall> calls;
  for (size_t i = 0; i < list.size(); ++i) calls.push_back(tool_call_of(list[i], fmt::format("{}[{}]", where, i)));
  return calls;
}

// A function_call message's content: one call or a list of them, as JSON text.
std::vector<ToolCall> calls_in_content(const std::string& content, const std::string& where) {
  json parsed;
  try {
    parsed = json::parse(content);
  } catch (const json::parse_error& e) {
    fail("{}: a tool call's content must be JSON ({{\"name\": ..., \"arguments\": {{...}}}}): {}", where, e.what());
  }
  if (parsed.is_array()) return tool_calls_of(parsed, where);
  return {tool_call_of(parsed, where)};
}

std::optional<bool> loss_flag(const json& object, const std::string& where) {
  auto it = object.find("loss");
  if (it == object.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) fail("{}.loss: expected true or false, got {}", where, it->dump());
  return it->get<bool>();
}

// The content: a string; null (or absent) where tool calls stand in for it.
std::string content_of(const json& object, const char* key, const std::string& where, bool may_be_empty) {
  auto it = object.find(key);
  if (may_be_empty && (it == object.end() || it->is_null())) return "";
  return string_field(object, key, where);
}

ChatMessage message_of(const json& object, const std::string& where, MessageKeys keys) {
  ChatMessage m;
  m.role = role_of(string_field(object, keys.role, where), where + "." + keys.role);
  if (auto calls = object.find("tool_calls"); calls != object.end()) {
    m.tool_calls = tool_calls_of(*calls, where + ".tool_calls");
    if (!m.tool_calls.empty() && m.role != "assistant")
      fail("{}.tool_calls: only an assistant calls tools, not a {}", where, m.role);
  }
  m.content = content_of(object, keys.content, where, !m.tool_calls.empty());
  if (m.role == "tool_call") m.tool_calls = calls_in_content(m.content, where + "." + keys.content), m.content.clear();
  if (auto r = object.find("reasoning_content"); r != object.end() && !r->is_null()) {
    if (!r->is_string()) fail("{}.reasoning_content: expected a string", where);
    m.reasoning = r->get<std::string>();
  }
  m.loss = loss_flag(object, where);
  if (m.loss && m.role != "assistant" && m.role != "tool_call")
    fail("{}.loss: only an assistant's answer can count, not a {}'s", where, m.role);
  return m;
}

}  // namespace

std::string string_field(const json& object, const char* key, const std::string& where) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_string())
    fail("{}.{}: {}", where, key, it == object.end() ? "missing" : "expected a string, got " + std::string(it->type_name()));
  return it->get<std::string>();
}

std::vector<ChatMessage> read_messages(const json& list, const std::string& where, MessageKeys keys) {
  if (!list.is_array()) fail("{}: expected an array, got {}", where, list.type_name());
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string at = fmt::format("{}[{}]", where, i);
    if (!list[i].is_object()) fail("{}: expected an object with {} and {}", at, keys.role, keys.content);
    ChatMessage m = message_of(list[i], at, keys);
    if (m.role != "tool_call") {
      out.push_back(std::move(m));
    } else if (!out.empty() && out.back().role == "assistant") {  // the calls of the answer before
      auto& calls = out.back().tool_calls;
      calls.insert(calls.end(), m.tool_calls.begin(), m.tool_calls.end());
      if (m.loss) out.back().loss = m.loss;
    } else {
      m.role = "assistant";
      out.push_back(std::move(m));
    }
  }
  return out;
}

ChatMessage read_message(const json& object, const std::string& where, MessageKeys keys) {
  if (!object.is_object()) fail("{}: expected an object with {} and {}", where, keys.role, keys.content);
  return message_of(object, where, keys);
}

std::vector<ChatMessage> alpaca_prompt(const json& record) {
  std::vector<ChatMessage> out;
  if (auto h = record.find("history"); h != record.end() && !h->is_null()) {
    if (!h->is_array()) fail("history: expected an array of [question, answer] pairs");
    for (size_t i = 0; i < h->size(); ++i) {
      const json& turn = (*h)[i];
      if (!turn.is_array() || turn.size() != 2 || !turn[0].is_string() || !turn[1].is_string())
        fail("history[{}]: expected [question, answer]", i);
      out.push_back({"user", turn[0].get<std::string>()});
      out.push_back({"assistant", turn[1].get<std::string>()});
    }
  }
  std::string question = string_field(record, "instruction", "record");
  if (auto in = record.find("input"); in != record.end() && !in->is_null()) {
    const std::string input = string_field(record, "input", "record");
    if (!input.empty()) question += "\n" + input;
  }
  out.push_back({"user", question});
  return out;
}

void add_system_field(const json& record, std::vector<ChatMessage>& messages) {
  if (auto s = record.find("system"); s != record.end() && !s->is_null())
    messages.insert(messages.begin(), ChatMessage{"system", string_field(record, "system", "record")});
}

std::vector<json> read_tools(const json& record) {
  auto it = record.find("tools");
  if (it == record.end() || it->is_null()) return {};
  json tools = *it;
  if (tools.is_string()) {
    try {
      tools = json::parse(tools.get<std::string>());
    } catch (const json::parse_error& e) {
      fail("tools: a string must hold a JSON list of function signatures: {}", e.what());
    }
  }
  if (!tools.is_array()) fail("tools: expected a list of function signatures, got {}", tools.type_name());
  for (size_t i = 0; i < tools.size(); ++i)
    if (!tools[i].is_object()) fail("tools[{}]: expected an object, got {}", i, tools[i].type_name());
  return std::vector<json>(tools.begin(), tools.end());
}

}  // namespace zt
