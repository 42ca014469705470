#include "tokenize/chat_record.hpp"

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "tokenize/chat_messages.hpp"
#include "tokenize/token_record.hpp"

namespace zt {
namespace {

using json = nlohmann::ordered_json;

bool has(const json& record, const char* key) { return record.contains(key); }

std::vector<ChatMessage> alpaca_messages(const json& record) {
  std::vector<ChatMessage> out = alpaca_prompt(record);
  out.push_back({"assistant", string_field(record, "output", "record")});
  return out;
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
  for (ChatMessage& m : read_messages(completion, "completion", kOpenAi)) d.conversation.messages.push_back(std::move(m));
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

std::optional<TrainOn> train_on_from_name(std::string_view name) {
  if (name == "all") return TrainOn::All;
  if (name == "last") return TrainOn::Last;
  return std::nullopt;
}

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
