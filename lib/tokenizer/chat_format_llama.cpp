// The Llama 3 formats: Llama 3's template, and Llama 3.1's with its system header and tools, as
// their Jinja templates write them (tests/fixtures/tokenizer/templates, chat.json).
#include "core/error.hpp"
#include "tokenizer/chat_format_render.hpp"
#include "tokenizer/template_json.hpp"

namespace zt::chat {
namespace {

constexpr const char* kLlama31Dates = "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n";
constexpr const char* kLlama31ToolsPrompt =
    "Given the following functions, please respond with a JSON for a function call with its proper arguments that "
    "best answers the given prompt.\n\nRespond in the format {\"name\": function name, \"parameters\": dictionary of "
    "argument name and its value}.Do not use variables.\n\n";

void header(Render& r, const std::string& role) { r.text("<|start_header_id|>" + role + "<|end_header_id|>\n\n"); }

void turn(Render& r, const ChatMessage& m) {
  header(r, m.role);
  r.content(trim(m.content), counted(m));
  r.text("<|eot_id|>", counted(m));
}

void generation_prompt(Render& r, const ChatOptions& o) {
  if (o.generation_prompt) header(r, "assistant");
}

// The system turn: the header lines, then the conversation's system message (trimmed) if it has one.
void llama31_system(Render& r, const Conversation& c, bool system) {
  header(r, "system");
  if (!c.tools.empty()) r.text("Environment: ipython\n");
  r.text(kLlama31Dates);
  if (system) r.content(trim(c.messages.front().content), false);
  r.text("<|eot_id|>");
}

// The tools go into the first message after the system one, written as a user's.
void llama31_tools_turn(Render& r, const Conversation& c, const ChatMessage& first) {
  header(r, "user");
  r.text(kLlama31ToolsPrompt);
  for (const auto& tool : c.tools) {
    r.content(template_json(tool, 4), false);
    r.text("\n\n");
  }
  r.content(trim(first.content), false);
  r.text("<|eot_id|>");
}

// {"name": NAME, "parameters": ARGUMENTS} as the assistant's turn; its content is not written.
void llama31_tool_call(Render& r, const ChatMessage& m) {
  const bool counts = counted(m);
  const ToolCall& call = m.tool_calls.front();
  header(r, "assistant");
  r.text("{\"name\": \"", counts);
  r.content(call.name, counts);
  r.text("\", \"parameters\": ", counts);
  r.content(template_json(call.arguments), counts);
  r.text("}<|eot_id|>", counts);
}

// A tool's result under the ipython header, as a JSON string (the template's tojson of the content).
void llama31_tool_result(Render& r, const ChatMessage& m) {
  header(r, "ipython");
  r.content(template_json_string(m.content), false);
  r.text("<|eot_id|>");
}

}  // namespace

void render_llama3(Render& r, const Conversation& c, const ChatOptions& o) {
  r.text(o.bos_token);
  for (const ChatMessage& m : c.messages) turn(r, m);
  generation_prompt(r, o);
}

void render_llama31(Render& r, const Conversation& c, const ChatOptions& o) {
  const bool system = c.messages.front().role == "system";
  size_t i = system ? 1 : 0;
  if (!c.tools.empty() && i == c.messages.size())
    fail("tools: Llama 3.1's template puts them in the first message after the system one, and there is none");
  r.text(o.bos_token);
  llama31_system(r, c, system);
  if (!c.tools.empty()) llama31_tools_turn(r, c, c.messages[i++]);
  for (; i < c.messages.size(); ++i) {
    const ChatMessage& m = c.messages[i];
    if (m.role == "tool")
      llama31_tool_result(r, m);
    else if (!m.tool_calls.empty())
      llama31_tool_call(r, m);
    else
      turn(r, m);
  }
  generation_prompt(r, o);
}

}  // namespace zt::chat
