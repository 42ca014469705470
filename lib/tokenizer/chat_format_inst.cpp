// The [INST] formats: Llama-2-chat's template and Mistral-7B-Instruct-v0.2's (mistral-common's v1
// template, with its system message), as their Jinja templates write them
// (tests/fixtures/tokenizer/templates, chat.json). Both take user and assistant messages in turn
// after an optional system message, and neither has a generation prompt of its own: a prompt ends
// with the user's " [/INST]".
#include "core/error.hpp"
#include "tokenizer/chat_format_render.hpp"

namespace zt::chat {
namespace {

// The templates' raise_exception: a system message first or not at all, then user, assistant, ...
void check_turns(const Conversation& c, std::string_view template_name) {
  const size_t first = c.messages.front().role == "system" ? 1 : 0;
  for (size_t i = first; i < c.messages.size(); ++i) {
    const std::string& role = c.messages[i].role;
    const char* expected = (i - first) % 2 == 0 ? "user" : "assistant";
    if (role != expected)
      fail("messages[{}].role: \"{}\" where {}'s template takes \"{}\" (user and assistant in turn, after an "
           "optional first system message)",
           i, role, template_name, expected);
  }
}

// ' ' + CONTENT + ' ' + EOS (Llama 2, CONTENT stripped) or ' ' + CONTENT + EOS (Mistral): the
// space before the answer is the answer's (SentencePiece writes it into the answer's first token).
void answer(Render& r, const ChatMessage& m, const ChatOptions& o, bool llama2) {
  const bool counts = counted(m);
  r.text(" ", counts);
  r.content(llama2 ? trim(m.content) : m.content, counts);
  r.text(llama2 ? " " + o.eos_token : o.eos_token, counts);
}

}  // namespace

void render_llama2(Render& r, const Conversation& c, const ChatOptions& o) {
  check_turns(c, "Llama 2");
  const bool system = c.messages.front().role == "system";
  for (size_t i = system ? 1 : 0; i < c.messages.size(); ++i) {
    const ChatMessage& m = c.messages[i];
    if (m.role == "assistant") {
      answer(r, m, o, true);
      continue;
    }
    // The first question carries the system message, and the template strips the whole (its
    // <<SYS>> lines are no special tokens: they encode as the message text around them does).
    r.text(o.bos_token + "[INST] ");
    if (system && i == 1)
      r.content(trim("<<SYS>>\n" + c.messages.front().content + "\n<</SYS>>\n\n" + m.content), false);
    else
      r.content(trim(m.content), false);
    r.text(" [/INST]");
  }
}

void render_mistral(Render& r, const Conversation& c, const ChatOptions& o) {
  check_turns(c, "Mistral");
  const bool system = c.messages.front().role == "system";
  r.text(o.bos_token);
  for (size_t i = system ? 1 : 0; i < c.messages.size(); ++i) {
    const ChatMessage& m = c.messages[i];
    if (m.role == "assistant") {
      answer(r, m, o, false);
      continue;
    }
    r.text(" [INST] ");
    if (system && i == 1) r.content(c.messages.front().content + "\n\n", false);
    r.content(m.content, false);
    r.text(" [/INST]");
  }
}

}  // namespace zt::chat
