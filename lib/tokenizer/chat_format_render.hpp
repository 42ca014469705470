#pragma once
// What the chat formats' renderers share (chat_format.cpp dispatches to them): the segments being
// written, and the text operations the templates use.
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/chat_format.hpp"

namespace zt::chat {

class Render {
public:
  // The template's own text (its special tokens are tokens), counted or not.
  void text(std::string s, bool counted = false) { add(std::move(s), true, counted); }
  // Text from the data: special tokens in it are text.
  void content(std::string s, bool counted) { add(std::move(s), false, counted); }
  std::vector<ChatSegment> segments;

private:
  void add(std::string s, bool template_text, bool counted) {
    if (!s.empty()) segments.push_back({std::move(s), template_text, counted});
  }
};

// Python's str.strip() without arguments, as Jinja's trim: Unicode whitespace at both ends.
std::string trim(std::string_view s);
// str.strip('\n'), lstrip('\n'), rstrip('\n').
std::string strip_newlines(std::string_view s, bool front, bool back);
// Whether the message's answer counts: an assistant's, unless its loss flag says not.
inline bool counted(const ChatMessage& m) { return m.role == "assistant" && m.loss.value_or(true); }

void render_chatml(Render& r, const Conversation& c, const ChatOptions& o);
void render_qwen25(Render& r, const Conversation& c, const ChatOptions& o);
void render_qwen3(Render& r, const Conversation& c, const ChatOptions& o);
void render_llama3(Render& r, const Conversation& c, const ChatOptions& o);
void render_llama31(Render& r, const Conversation& c, const ChatOptions& o);
void render_llama2(Render& r, const Conversation& c, const ChatOptions& o);
void render_mistral(Render& r, const Conversation& c, const ChatOptions& o);
void render_gemma(Render& r, const Conversation& c, const ChatOptions& o);

}  // namespace zt::chat
