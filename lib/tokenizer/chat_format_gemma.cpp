// The Gemma format: Gemma 3's template (tests/fixtures/tokenizer/templates/gemma3.jinja, chat.json),
// <start_of_turn>ROLE\nCONTENT<end_of_turn>\n per message after <bos>, the assistant's role written
// "model", the system message and a blank line opening the first user turn.
#include "core/error.hpp"
#include "tokenizer/chat_format_render.hpp"

namespace zt::chat {

void render_gemma(Render& r, const Conversation& c, const ChatOptions& o) {
  const bool system = c.messages.front().role == "system";
  const size_t first = system ? 1 : 0;
  // The template's raise_exception: after the system message, a user message at every even place and
  // none at an odd one.
  for (size_t i = first; i < c.messages.size(); ++i)
    if ((c.messages[i].role == "user") != ((i - first) % 2 == 0))
      fail(
          "messages[{}].role: \"{}\" where Gemma's template takes {} (user and assistant in turn, after an "
          "optional first system message)",
          i, c.messages[i].role, (i - first) % 2 == 0 ? "\"user\"" : "no \"user\"");
  r.text(o.bos_token);
  for (size_t i = first; i < c.messages.size(); ++i) {
    const ChatMessage& m = c.messages[i];
    r.text("<start_of_turn>" + (m.role == "assistant" ? std::string("model") : m.role) + "\n");
    if (system && i == first) r.content(c.messages.front().content + "\n\n", false);
    r.content(trim(m.content), counted(m));
    r.text("<end_of_turn>", counted(m));
    r.text("\n");
  }
  if (o.generation_prompt) r.text("<start_of_turn>model\n");
}

}  // namespace zt::chat
