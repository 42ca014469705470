#include "tokenizer/chat_format.hpp"

#include "core/error.hpp"
#include "tokenizer/chat_format_render.hpp"
#include "tokenizer/tokenizer.hpp"

namespace zt {
namespace {

bool is_llama(ChatFormat f) { return f == ChatFormat::Llama3 || f == ChatFormat::Llama31; }
bool is_inst(ChatFormat f) { return f == ChatFormat::Llama2 || f == ChatFormat::Mistral; }

void check_message(ChatFormat format, const ChatMessage& m, size_t index) {
  const bool tools = chat_format_has_tools(format);
  const bool known = m.role == "system" || m.role == "user" || m.role == "assistant" || (tools && m.role == "tool");
  if (!known)
    fail("messages[{}].role: \"{}\" is not rendered by the {} format ({})", index, m.role,
         kChatFormatNames.name(format),
         tools ? "system, user, assistant or tool" : "system, user or assistant: it has no tools");
  if (m.tool_calls.empty()) return;
  if (m.role != "assistant") fail("messages[{}].tool_calls: only an assistant calls tools, not a {}", index, m.role);
  if (!tools)
    fail("messages[{}].tool_calls: the {} format has no tool calls (qwen2.5, qwen3 and llama3.1 have)", index,
         kChatFormatNames.name(format));
  if (format == ChatFormat::Llama31 && m.tool_calls.size() > 1)
    fail("messages[{}].tool_calls: {} calls in one turn, but Llama 3.1's template writes one call a turn", index,
         m.tool_calls.size());
}

void check_conversation(ChatFormat format, const Conversation& c) {
  if (!c.tools.empty() && !chat_format_has_tools(format))
    fail("tools: the {} format has no tools (qwen2.5, qwen3 and llama3.1 have)", kChatFormatNames.name(format));
  for (size_t i = 0; i < c.messages.size(); ++i) check_message(format, c.messages[i], i);
}

}  // namespace

namespace chat {

std::string trim(std::string_view s) {
  static const char* const spaces[] = {"\t", "\n", "\v", "\f", "\r", "\x1c", "\x1d", "\x1e", "\x1f", " ",
                                       "\xC2\x85", "\xC2\xA0", "\xE1\x9A\x80", "\xE2\x80\x80", "\xE2\x80\x81",
                                       "\xE2\x80\x82", "\xE2\x80\x83", "\xE2\x80\x84", "\xE2\x80\x85", "\xE2\x80\x86",
                                       "\xE2\x80\x87", "\xE2\x80\x88", "\xE2\x80\x89", "\xE2\x80\x8A", "\xE2\x80\xA8",
                                       "\xE2\x80\xA9", "\xE2\x80\xAF", "\xE2\x81\x9F", "\xE3\x80\x80"};
  auto space_at_start = [&](std::string_view t) -> size_t {
    for (const char* sp : spaces)
      if (t.starts_with(sp)) return std::string_view(sp).size();
    return 0;
  };
  auto space_at_end = [&](std::string_view t) -> size_t {
    for (const char* sp : spaces)
      if (t.ends_with(sp)) return std::string_view(sp).size();
    return 0;
  };
  while (size_t n = space_at_start(s)) s.remove_prefix(n);
  while (size_t n = space_at_end(s)) s.remove_suffix(n);
  return std::string(s);
}

std::string strip_newlines(std::string_view s, bool front, bool back) {
  while (front && !s.empty() && s.front() == '\n') s.remove_prefix(1);
  while (back && !s.empty() && s.back() == '\n') s.remove_suffix(1);
  return std::string(s);
}

}  // namespace chat

std::vector<int32_t> end_token_ids(const Tokenizer& tokenizer) {
  std::vector<int32_t> ids;
  for (const std::string& end : {tokenizer.config_string("eos_token"), std::string("<|endoftext|>"),
                                 std::string("<|end_of_text|>"), std::string("<|eot_id|>"), std::string("<|eom_id|>"),
                                 std::string("<|im_end|>"), std::string("</s>"), std::string("<end_of_turn>")})
    if (const AddedToken* token = end.empty() ? nullptr : tokenizer.added_tokens().by_content(end))
      ids.push_back(token->id);
  return ids;
}

bool chat_format_has_tools(ChatFormat format) {
  return format == ChatFormat::Qwen25 || format == ChatFormat::Qwen3 || format == ChatFormat::Llama31;
}

// Mistral's templates of v0.3 on write tools, and [INST] as a control token.
bool mistral_tools(std::string_view t) {
  for (std::string_view s : {"[AVAILABLE_TOOLS]", "[TOOL_CALLS]", "[SYSTEM_PROMPT]"})
    if (t.find(s) != std::string_view::npos) return true;
  return false;
}

std::optional<ChatFormat> chat_format_of_template(std::string_view t) {
  auto has = [&](std::string_view s) { return t.find(s) != std::string_view::npos; };
  if (has("<|start_header_id|>")) return has("Cutting Knowledge Date") ? ChatFormat::Llama31 : ChatFormat::Llama3;
  // Llama 2 writes <<SYS>>; Mistral's v1 template " [INST] " with the space before it.
  if (has("[INST]") && !mistral_tools(t)) {
    if (has("<<SYS>>")) return ChatFormat::Llama2;
    if (has(" [INST] ") && has("system_message")) return ChatFormat::Mistral;
    return std::nullopt;
  }
  if (has("<start_of_turn>") && has("<end_of_turn>")) return ChatFormat::Gemma;
  if (!has("<|im_start|>")) return std::nullopt;
  if (has("You are Qwen, created by Alibaba Cloud")) return ChatFormat::Qwen25;
  return has("<think>") ? ChatFormat::Qwen3 : ChatFormat::ChatMl;
}

std::string unrendered_chat_template(std::string_view t) {
  if (t.find("[INST]") == std::string_view::npos || chat_format_of_template(t)) return "";
  if (mistral_tools(t))
    return "a Mistral template of v0.3 or later ([INST] a control token, tools), which zerotrain does not render";
  return "an [INST] template other than Llama-2-chat's (llama2) and Mistral-7B-Instruct-v0.2's (mistral): they "
         "differ in spaces and system messages, and zerotrain renders those two only";
}

std::optional<ChatFormat> chat_format_of(const Tokenizer& tokenizer, std::string* how) {
  if (const std::string& t = tokenizer.config_string("chat_template"); !t.empty()) {
    if (how) *how = "its chat template";
    return chat_format_of_template(t);
  }
  if (how) *how = "its special tokens";
  auto has = [&](std::string_view t) { return tokenizer.added_tokens().by_content(t) != nullptr; };
  if (has("<|start_header_id|>") && has("<|eot_id|>")) return ChatFormat::Llama3;
  if (has("<|im_start|>") && has("<|im_end|>")) return has("<think>") ? ChatFormat::Qwen3 : ChatFormat::ChatMl;
  if (has("<start_of_turn>") && has("<end_of_turn>")) return ChatFormat::Gemma;
  return std::nullopt;
}

void check_chat_format(ChatFormat format, const Tokenizer& tokenizer) {
  std::vector<std::string> needed;
  if (is_llama(format))
    needed = {"<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"};
  else if (is_inst(format))
    needed = {chat_bos_token(tokenizer), chat_eos_token(tokenizer)};
  else if (format == ChatFormat::Gemma)
    needed = {chat_bos_token(tokenizer), "<start_of_turn>", "<end_of_turn>"};
  else
    needed = {"<|im_start|>", "<|im_end|>"};
  if (is_inst(format) && tokenizer.added_tokens().by_content("[INST]"))
    fail("chat format {}: the tokenizer ({}) has [INST] as a control token, as Mistral's of v0.3 on, whose template "
         "writes other spaces: zerotrain does not render it",
         kChatFormatNames.name(format), tokenizer.source());
  for (const std::string& t : needed)
    if (!tokenizer.added_tokens().by_content(t))
      fail("chat format {}: the tokenizer ({}) has no {} token", kChatFormatNames.name(format), tokenizer.source(), t);
}

std::vector<ChatSegment> render_chat(ChatFormat format, const Conversation& conversation, const ChatOptions& options) {
  check_conversation(format, conversation);
  chat::Render r;
  if (conversation.messages.empty()) return r.segments;
  switch (format) {
    case ChatFormat::ChatMl: chat::render_chatml(r, conversation, options); break;
    case ChatFormat::Qwen25: chat::render_qwen25(r, conversation, options); break;
    case ChatFormat::Qwen3: chat::render_qwen3(r, conversation, options); break;
    case ChatFormat::Llama3: chat::render_llama3(r, conversation, options); break;
    case ChatFormat::Llama31: chat::render_llama31(r, conversation, options); break;
    case ChatFormat::Llama2: chat::render_llama2(r, conversation, options); break;
    case ChatFormat::Mistral: chat::render_mistral(r, conversation, options); break;
    case ChatFormat::Gemma: chat::render_gemma(r, conversation, options); break;
  }
  return r.segments;
}

std::vector<TextSegment> text_segments(const std::vector<ChatSegment>& segments) {
  std::vector<TextSegment> views;
  for (const ChatSegment& s : segments) views.push_back({s.text, s.template_text, s.counted});
  return views;
}

std::string chat_bos_token(const Tokenizer& tokenizer) {
  const std::string bos = tokenizer.config_string("bos_token");
  if (!bos.empty()) return bos;
  return tokenizer.added_tokens().by_content("<s>") ? "<s>" : "<|begin_of_text|>";
}

std::string chat_eos_token(const Tokenizer& tokenizer) {
  const std::string eos = tokenizer.config_string("eos_token");
  return eos.empty() ? "</s>" : eos;
}

}  // namespace zt
