#include "tokenize/preference_record.hpp"

#include <fstream>

#include "core/error.hpp"
#include "tokenize/chat_messages.hpp"

namespace zt {
namespace {

using json = nlohmann::ordered_json;

bool has(const json& record, const char* key) { return record.contains(key); }

const json& field(const json& record, const char* key) {
  auto it = record.find(key);
  if (it == record.end() || it->is_null()) fail("{}: missing", key);
  return *it;
}

std::string text_field(const json& record, const char* key) {
  const json& value = field(record, key);
  if (!value.is_string()) fail("{}: expected a string, got {}", key, value.type_name());
  return value.get<std::string>();
}

std::vector<ChatMessage> answers(const json& record, const char* key) {
  std::vector<ChatMessage> messages = read_messages(field(record, key), key, kOpenAi);
  if (messages.empty()) fail("{}: no message (expected the assistant's answer)", key);
  return messages;
}

ChatMessage answer(const json& record, const char* key, MessageKeys keys) {
  ChatMessage m = read_message(field(record, key), key, keys);
  if (m.role != "assistant") fail("{}.{}: a {}'s message, not an assistant's answer", key, keys.role, m.role);
  return m;
}

// ShareGPT's keys (from/value) where a message (or a list's first) has "from", else OpenAI's.
MessageKeys message_keys_of(const json& message_or_list) {
  const json& first = message_or_list.is_array() && !message_or_list.empty() ? message_or_list[0] : message_or_list;
  return first.is_object() && first.contains("from") ? kShareGpt : kOpenAi;
}

// LLaMA-Factory takes a pair's prompt only when it ends with a question (or a tool's result).
void check_ends_with_question(const std::vector<ChatMessage>& prompt, const char* where) {
  if (prompt.empty()) fail("{}: no message (expected the question answered)", where);
  if (prompt.back().role == "assistant" || prompt.back().role == "system")
    fail("{}: the last message is the {}'s; a pair's prompt ends with the question its answers answer", where,
         prompt.back().role);
}

// TRL's extract_prompt on two texts: the longest shared start, in characters, less a space that ends
// it (that space then starts both answers); when one text starts the other, all but the shorter's last
// character.
size_t implicit_text_prompt(const std::string& chosen, const std::string& rejected) {
  auto starts_char = [](const std::string& s, size_t i) { return i >= s.size() || (uint8_t(s[i]) & 0xC0) != 0x80; };
  const size_t n = std::min(chosen.size(), rejected.size());
  size_t i = 0;
  while (i < n && chosen[i] == rejected[i]) ++i;
  if (i == n) {
    // No character differs: the loop of extract_prompt ends on the shorter text's last character.
    if (i > 0) --i;
    while (i > 0 && !starts_char(chosen, i)) --i;
    return i;
  }
  while (i > 0 && !starts_char(chosen, i)) --i;  // the character that differs starts there
  if (i > 0 && chosen[i - 1] == ' ') --i;
  return i;
}

// The same on two lists of messages, each compared as a whole (keys in any order).
size_t implicit_chat_prompt(const json& chosen, const json& rejected) {
  const size_t n = std::min(chosen.size(), rejected.size());
  for (size_t i = 0; i < n; ++i)
    if (nlohmann::json::parse(chosen[i].dump()) != nlohmann::json::parse(rejected[i].dump())) return i;
  return n == 0 ? 0 : n - 1;
}

json slice(const json& list, size_t from, size_t to) {
  return json(list.begin() + long(from), list.begin() + long(to));
}

PreferencePair implicit_pair(const json& record, bool text) {
  PreferencePair p;
  p.text = text;
  if (text) {
    const std::string chosen = text_field(record, "chosen"), rejected = text_field(record, "rejected");
    const size_t cut = implicit_text_prompt(chosen, rejected);
    if (cut == 0) fail("chosen and rejected share no start: there is no prompt to split off (TRL's implicit prompt)");
    p.prompt = chosen.substr(0, cut);
    p.chosen = chosen.substr(cut);
    p.rejected = rejected.substr(cut);
    return p;
  }
  const json& chosen = field(record, "chosen");
  const json& rejected = field(record, "rejected");
  for (const auto& [key, list] : {std::pair{"chosen", &chosen}, std::pair{"rejected", &rejected}})
    if (!list->is_array() || list->empty()) fail("{}: expected a list of messages, got {}", key, list->type_name());
  const size_t cut = implicit_chat_prompt(chosen, rejected);
  if (cut == 0)
    fail("chosen and rejected share no first message: there is no prompt to split off (TRL's implicit prompt)");
  p.prompt_chat.messages = read_messages(slice(chosen, 0, cut), "chosen", kOpenAi);
  p.chosen_chat = read_messages(slice(chosen, cut, chosen.size()), "chosen (after the prompt)", kOpenAi);
  p.rejected_chat = read_messages(slice(rejected, cut, rejected.size()), "rejected (after the prompt)", kOpenAi);
  return p;
}

// ms-swift's conversation: the messages, ending with an assistant's answer.
std::vector<ChatMessage> swift_conversation(const json& record, const char* key) {
  std::vector<ChatMessage> messages = read_messages(field(record, key), key, kOpenAi);
  if (messages.empty() || messages.back().role != "assistant")
    fail("{}: the last message is {}, not an assistant's answer (ms-swift's pairs end with it)", key,
         messages.empty() ? "missing" : "a " + messages.back().role + "'s");
  return messages;
}

PreferencePair chat_pair(const json& record, PreferenceForm form) {
  PreferencePair p;
  std::vector<ChatMessage>& prompt = p.prompt_chat.messages;
  switch (form) {
    case PreferenceForm::TrlChat:
      prompt = read_messages(field(record, "prompt"), "prompt", kOpenAi);
      p.chosen_chat = answers(record, "chosen");
      p.rejected_chat = answers(record, "rejected");
      break;
    case PreferenceForm::Alpaca:
      prompt = alpaca_prompt(record);
      add_system_field(record, prompt);
      p.chosen_chat = {{"assistant", text_field(record, "chosen")}};
      p.rejected_chat = {{"assistant", text_field(record, "rejected")}};
      break;
    case PreferenceForm::ShareGpt: {
      // LLaMA-Factory's sharegpt, or its OpenAI-style variant: "messages" and role/content.
      const char* list = has(record, "conversations") ? "conversations" : "messages";
      prompt = read_messages(field(record, list), list, message_keys_of(field(record, list)));
      check_ends_with_question(prompt, list);
      add_system_field(record, prompt);
      p.chosen_chat = {answer(record, "chosen", message_keys_of(field(record, "chosen")))};
      p.rejected_chat = {answer(record, "rejected", message_keys_of(field(record, "rejected")))};
      break;
    }
    case PreferenceForm::Swift: {
      prompt = swift_conversation(record, "messages");
      p.chosen_chat = {std::move(prompt.back())};
      prompt.pop_back();
      if (!has(record, "rejected_messages")) {
        p.rejected_chat = {{"assistant", text_field(record, "rejected_response")}};
        break;
      }
      // rejected_messages: the whole conversation, the same as messages up to its own last answer.
      const json& chosen = field(record, "messages");
      const json& rejected = field(record, "rejected_messages");
      std::vector<ChatMessage> other = swift_conversation(record, "rejected_messages");
      if (rejected.size() != chosen.size() || implicit_chat_prompt(chosen, rejected) != chosen.size() - 1)
        fail("rejected_messages: its messages before the last differ from those of messages: a pair shares its prompt");
      p.rejected_chat = {std::move(other.back())};
      break;
    }
    default:
      break;
  }
  return p;
}

}  // namespace

std::string_view preference_form_name(PreferenceForm form) {
  // In the order of PreferenceForm.
  static constexpr std::string_view kNames[] = {
      "no preference pair",
      "TRL's prompt/chosen/rejected as text",
      "TRL's prompt/chosen/rejected as conversations",
      "TRL's chosen/rejected as text with an implicit prompt",
      "TRL's chosen/rejected as conversations with an implicit prompt",
      "LLaMA-Factory's alpaca pairs",
      "LLaMA-Factory's sharegpt pairs",
      "ms-swift's messages with rejected_response or rejected_messages"};
  return kNames[size_t(form)];
}

PreferenceForm preference_form_of(const json& record) {
  if (!record.is_object()) return PreferenceForm::None;
  if (has(record, "rejected_response") || has(record, "rejected_messages")) return PreferenceForm::Swift;
  if (!has(record, "chosen") && !has(record, "rejected")) return PreferenceForm::None;
  auto chosen = record.find("chosen");
  if (has(record, "conversations") || (has(record, "messages") && chosen != record.end() && chosen->is_object()))
    return PreferenceForm::ShareGpt;
  if (has(record, "instruction")) return PreferenceForm::Alpaca;
  if (auto prompt = record.find("prompt"); prompt != record.end())
    return prompt->is_string() ? PreferenceForm::TrlText : PreferenceForm::TrlChat;
  auto answer = chosen != record.end() ? chosen : record.find("rejected");
  return answer->is_string() ? PreferenceForm::ImplicitText : PreferenceForm::ImplicitChat;
}

FileForm preference_form_of_file(const DataInput& input) {
  if (input.kind == DataInput::JsonLines) {
    std::ifstream in(input.path, std::ios::binary);
    std::string line;
    for (uint64_t number = 1; std::getline(in, line); ++number) {
      const json record = json::parse(line, nullptr, false);
      if (record.is_object()) return {preference_form_of(record), fmt::format("{}:{}", input.path, number)};
    }
  } else if (input.kind == DataInput::JsonArray) {
    std::ifstream in(input.path, std::ios::binary);
    const json records = json::parse(in, nullptr, false);
    if (records.is_array())
      for (size_t i = 0; i < records.size(); ++i)
        if (records[i].is_object())
          return {preference_form_of(records[i]), fmt::format("{}: element {}", input.path, i)};
  }
  return {};
}

PreferencePair preference_pair_of(const json& record, PreferenceForm form, const std::optional<std::string>& system) {
  PreferencePair p;
  switch (form) {
    case PreferenceForm::None:
      fail("not a preference pair");
    case PreferenceForm::TrlText:
      p.text = true;
      p.prompt = text_field(record, "prompt");
      p.chosen = text_field(record, "chosen");
      p.rejected = text_field(record, "rejected");
      return p;
    case PreferenceForm::ImplicitText:
      return implicit_pair(record, true);
    case PreferenceForm::ImplicitChat:
      p = implicit_pair(record, false);
      break;
    default:
      p = chat_pair(record, form);
      break;
  }
  p.prompt_chat.tools = read_tools(record);
  std::vector<ChatMessage>& prompt = p.prompt_chat.messages;
  if (system && (prompt.empty() || prompt.front().role != "system"))
    prompt.insert(prompt.begin(), ChatMessage{"system", *system});
  return p;
}

}  // namespace zt
