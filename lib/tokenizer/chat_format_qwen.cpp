// The ChatML formats: plain ChatML, Qwen2.5-Instruct's template and Qwen3's, tools included, as
// their Jinja templates write them (tests/fixtures/tokenizer/templates, chat.json).
#include "tokenizer/chat_format_render.hpp"
#include "tokenizer/template_json.hpp"

namespace zt::chat {
namespace {

constexpr const char* kQwenDefaultSystem = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";
constexpr const char* kToolsIntro =
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function "
    "signatures within <tools></tools> XML tags:\n<tools>";
constexpr const char* kToolsOutro =
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
    "<args-json-object>}\n</tool_call><|im_end|>\n";

bool starts_with_system(const Conversation& c) { return c.messages.front().role == "system"; }

// The function signatures after the system message's text, closing the system turn.
void tools_block(Render& r, const Conversation& c) {
  r.text(kToolsIntro);
  for (const auto& tool : c.tools) {
    r.text("\n");
    r.content(template_json(tool), false);
  }
  r.text(kToolsOutro);
}

void plain_turn(Render& r, const ChatMessage& m) {
  r.text("<|im_start|>" + m.role + "\n");
  r.content(m.content, counted(m));
  r.text("<|im_end|>", counted(m));
  r.text("\n");
}

// Consecutive tool results share one user turn, each in <tool_response> tags.
void tool_response(Render& r, const std::vector<ChatMessage>& messages, size_t i) {
  if (i == 0 || messages[i - 1].role != "tool") r.text("<|im_start|>user");
  r.text("\n<tool_response>\n");
  r.content(messages[i].content, false);
  r.text("\n</tool_response>");
  if (i + 1 == messages.size() || messages[i + 1].role != "tool") r.text("<|im_end|>\n");
}

// <tool_call>\n{"name": NAME, "arguments": ARGUMENTS}\n</tool_call>; Qwen3 writes string arguments
// as they are, Qwen2.5 as a JSON string.
void tool_call(Render& r, const ToolCall& call, bool counts, bool string_as_is) {
  r.text("<tool_call>\n{\"name\": \"", counts);
  r.content(call.name, counts);
  r.text("\", \"arguments\": ", counts);
  const bool as_is = string_as_is && call.arguments.is_string();
  r.content(as_is ? call.arguments.get<std::string>() : template_json(call.arguments), counts);
  r.text("}\n</tool_call>", counts);
}

void generation_prompt(Render& r, const ChatOptions& o) {
  if (o.generation_prompt) r.text("<|im_start|>assistant\n");
}

// Qwen2.5: "<|im_start|>assistant" then "\n" + content when there is content, then "\n<tool_call>..."
// per call; the header's line break is the same text either way.
void qwen25_assistant(Render& r, const ChatMessage& m) {
  const bool counts = counted(m);
  r.text("<|im_start|>assistant\n");
  r.content(m.content, counts);
  for (size_t k = 0; k < m.tool_calls.size(); ++k) {
    if (k > 0 || !m.content.empty()) r.text("\n", counts);
    tool_call(r, m.tool_calls[k], counts, false);
  }
  r.text("<|im_end|>", counts);
  r.text("\n");
}

// The last question: the last user message that is not a tool result wrapped in tags.
size_t qwen3_last_query(const std::vector<ChatMessage>& messages) {
  for (size_t i = messages.size(); i-- > 0;) {
    const std::string& c = messages[i].content;
    if (messages[i].role == "user" && !(c.starts_with("<tool_response>") && c.ends_with("</tool_response>"))) return i;
  }
  return messages.size() - 1;
}

// Qwen3's answer: the reasoning from reasoning_content or <think> in the content, a thinking block
// after the last question, then the content and the tool calls.
void qwen3_assistant(Render& r, const ChatMessage& m, bool after_last_query, bool last) {
  const bool counts = counted(m);
  std::string content = m.content, reasoning;
  if (m.reasoning) {
    reasoning = *m.reasoning;
  } else if (const size_t end = content.rfind("</think>"); end != std::string::npos) {
    const std::string before = strip_newlines(content.substr(0, content.find("</think>")), false, true);
    const size_t open = before.rfind("<think>");
    reasoning = strip_newlines(open == std::string::npos ? before : before.substr(open + 7), true, false);
    content = strip_newlines(content.substr(end + 8), true, false);
  }
  r.text("<|im_start|>assistant\n");
  if (after_last_query && (last || !reasoning.empty())) {
    r.text("<think>\n", counts);
    r.content(strip_newlines(reasoning, true, true), counts);
    r.text("\n</think>\n\n", counts);
    r.content(strip_newlines(content, true, false), counts);
  } else {
    r.content(content, counts);
  }
  for (size_t k = 0; k < m.tool_calls.size(); ++k) {
    if (k > 0 || !content.empty()) r.text("\n", counts);
    tool_call(r, m.tool_calls[k], counts, true);
  }
  r.text("<|im_end|>", counts);
  r.text("\n");
}

}  // namespace

void render_chatml(Render& r, const Conversation& c, const ChatOptions& o) {
  for (const ChatMessage& m : c.messages) plain_turn(r, m);
  generation_prompt(r, o);
}

void render_qwen25(Render& r, const Conversation& c, const ChatOptions& o) {
  const bool system = starts_with_system(c);
  r.text("<|im_start|>system\n");
  if (system)
    r.content(c.messages.front().content, false);
  else
    r.text(kQwenDefaultSystem);
  if (c.tools.empty())
    r.text("<|im_end|>\n");
  else
    r.text("\n\n"), tools_block(r, c);
  for (size_t i = system ? 1 : 0; i < c.messages.size(); ++i) {
    const ChatMessage& m = c.messages[i];
    if (m.role == "tool")
      tool_response(r, c.messages, i);
    else if (m.role == "assistant")
      qwen25_assistant(r, m);
    else
      plain_turn(r, m);
  }
  generation_prompt(r, o);
}

void render_qwen3(Render& r, const Conversation& c, const ChatOptions& o) {
  const bool system = starts_with_system(c);
  if (!c.tools.empty()) {
    r.text("<|im_start|>system\n");
    if (system) r.content(c.messages.front().content, false), r.text("\n\n");
    tools_block(r, c);
  } else if (system) {
    plain_turn(r, c.messages.front());
  }
  const size_t last_query = qwen3_last_query(c.messages);
  for (size_t i = system ? 1 : 0; i < c.messages.size(); ++i) {
    const ChatMessage& m = c.messages[i];
    if (m.role == "tool")
      tool_response(r, c.messages, i);
    else if (m.role == "assistant")
      qwen3_assistant(r, m, i > last_query, i + 1 == c.messages.size());
    else
      plain_turn(r, m);
  }
  generation_prompt(r, o);
}

}  // namespace zt::chat
