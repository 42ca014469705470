#include "tokenize/chat_record.hpp"

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "tokenize/chat_messages.hpp"
#include "tokenize/token_record.hpp"

namespace zt {
namespace {

using json = nlohmann::ordered_json;

constexpr MessageKeys kOpenAi{"role", "content"};
constexpr MessageKeys kShareGpt{"from", "value"};

bool has(const json& record, const char* key) { return record.contains(key); }

std::vector<ChatMessage> alpaca_messages(const json& record) {
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
  out.push_back({"assistant", string_field(record, "output", "record")});
  return out;
}

// A record's own "system" field (ShareGPT's and Alpaca's) as the first message.
void add_system_field(const json& record, std::vector<ChatMessage>& messages) {
  if (auto s = record.find("system"); s != record.end() && !s->is_null())
    messages.insert(messages.begin(), ChatMessage{"system", string_field(record, "system", "record")});
}

// TRL's prompt-completion: two texts, or two lists of messages of which the prompt's never count.
Document prompt_completion(const json& record) {
  const json& prompt = record.at("prompt");
  const json& completion = record.at("completion");
  Document d;
  if (prompt.is_string() && completion.is_string()) {
    d.kind = Document::PromptCompletion;
    d.prompt = prompt.get<std::string>();
    d.completion = completion.get<std::string>();
    return d;
  }
  if (!prompt.is_array() || !completion.is_array())
    fail("prompt and completion: expected two strings or two lists of messages, got {} and {}", prompt.type_name(),
         completion.type_name());
  d.kind = Document::Chat;
  d.conversation.messages = read_messages(prompt, "prompt", kOpenAi);
  for (ChatMessage& m : d.conversation.messages) m.loss = false;
  for (ChatMessage& m : read_messages(completion, "completion", kOpenAi))
    d.conversation.messages.push_back(std::move(m));
  return d;
}

Document conversation_of(const json& record) {
  Document d;
  d.kind = Document::Chat;
  std::vector<ChatMessage>& messages = d.conversation.messages;
  if (auto m = record.find("messages"); m != record.end()) {
    messages = read_messages(*m, "messages", kOpenAi);
  } else if (auto c = record.find("conversations"); c != record.end()) {
    messages = read_messages(*c, "conversations", kShareGpt);
    add_system_field(record, messages);
  } else if (has(record, "prompt") || has(record, "completion")) {
    if (!has(record, "prompt") || !has(record, "completion"))
      fail("{}: missing (a prompt-completion record has both)", has(record, "prompt") ? "completion" : "prompt");
    d = prompt_completion(record);
  } else if (has(record, "instruction") || has(record, "output")) {
    messages = alpaca_messages(record);
    add_system_field(record, messages);
  } else {
    fail("no \"text\", \"messages\", \"conversations\", \"prompt\"/\"completion\", \"instruction\"/\"output\" or "
         "\"input_ids\" field");
  }
  if (d.kind == Document::Chat) d.conversation.tools = read_tools(record);
  return d;
}

// --system where the conversation has no system message; which answers count (--train-on, unless a
// message's loss flag says); at least one must.
void apply_options(Conversation& c, const RecordOptions& o) {
  if (o.system && (c.messages.empty() || c.messages.front().role != "system"))
    c.messages.insert(c.messages.begin(), ChatMessage{"system", *o.system});
  size_t last = c.messages.size();
  for (size_t i = 0; i < c.messages.size(); ++i)
    if (c.messages[i].role == "assistant") last = i;
  if (last == c.messages.size()) fail("the conversation has no assistant message: nothing to train on");
  bool any = false;
  for (size_t i = 0; i < c.messages.size(); ++i) {
    ChatMessage& m = c.messages[i];
    if (m.role != "assistant") continue;
    m.loss = m.loss.value_or(o.train_on == TrainOn::All || i == last);
    any |= *m.loss;
  }
  if (!any)
    fail("no assistant message counts ({}): nothing to train on",
         o.train_on == TrainOn::Last ? "the last one has \"loss\": false" : "each has \"loss\": false");
}

}  // namespace

Document document_of_record(const json& record, const RecordOptions& options) {
  if (!record.is_object()) fail("expected a JSON object, got {}", record.type_name());
  Document d;
  if (auto t = record.find("text"); t != record.end()) {
    if (!t->is_string()) fail("text: expected a string, got {}", t->type_name());
    d.text = t->get<std::string>();
    return d;
  }
  if (has(record, "input_ids")) {
    TokenRecord tokens = token_record_of(record);
    d.kind = Document::Tokens;
    d.ids = std::move(tokens.ids);
    d.counted = std::move(tokens.counted);
    return d;
  }
  d = conversation_of(record);
  if (d.kind == Document::Chat) apply_options(d.conversation, options);
  return d;
}

}  // namespace zt
