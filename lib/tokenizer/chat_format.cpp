#include "tokenizer/chat_format.hpp"

#include "core/error.hpp"
#include "tokenizer/tokenizer.hpp"

namespace zt {
namespace {

// Python's str.strip() without arguments, as Jinja's trim: Unicode whitespace at both ends.
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

class Render {
public:
  void text(std::string s, bool counted = false) { add(std::move(s), true, counted); }
  void content(std::string s, bool counted) { add(std::move(s), false, counted); }
  std::vector<ChatSegment> segments;

private:
  void add(std::string s, bool template_text, bool counted) {
    if (!s.empty()) segments.push_back({std::move(s), template_text, counted});
  }
};

void check_role(const ChatMessage& m, size_t index) {
  if (m.role != "system" && m.role != "user" && m.role != "assistant")
    fail("messages[{}].role: \"{}\" is not rendered (system, user or assistant)", index, m.role);
}

// Qwen3's template: thinking blocks on the answers after the last question.
void render_qwen3(Render& r, const std::vector<ChatMessage>& messages) {
  size_t last_query = messages.size() - 1;
  for (size_t i = messages.size(); i-- > 0;) {
    const std::string& c = messages[i].content;
    if (messages[i].role == "user" && !(c.starts_with("<tool_response>") && c.ends_with("</tool_response>"))) {
      last_query = i;
      break;
    }
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role != "assistant") {
      r.text("<|im_start|>" + m.role + "\n");
      r.content(m.content, false);
      r.text("<|im_end|>\n");
      continue;
    }
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
    if (i > last_query) {
      if (i + 1 == messages.size() || !reasoning.empty()) {
        r.text("<think>\n", true);
        r.content(strip_newlines(reasoning, true, true), true);
        r.text("\n</think>\n\n", true);
        content = strip_newlines(content, true, false);
      }
    }
    r.content(content, true);
    r.text("<|im_end|>", true);
    r.text("\n");
  }
}

}  // namespace

std::optional<ChatFormat> chat_format_from_name(std::string_view name) {
  if (name == "chatml") return ChatFormat::ChatMl;
  if (name == "qwen3") return ChatFormat::Qwen3;
  if (name == "llama3") return ChatFormat::Llama3;
  return std::nullopt;
}

std::string_view chat_format_name(ChatFormat format) {
  switch (format) {
    case ChatFormat::ChatMl: return "chatml";
    case ChatFormat::Qwen3: return "qwen3";
    case ChatFormat::Llama3: return "llama3";
  }
  return "?";
}

std::optional<ChatFormat> chat_format_of(const Tokenizer& tokenizer) {
  auto has = [&](std::string_view t) { return tokenizer.added_tokens().by_content(t) != nullptr; };
  if (has("<|start_header_id|>") && has("<|eot_id|>")) return ChatFormat::Llama3;
  if (has("<|im_start|>") && has("<|im_end|>")) return has("<think>") ? ChatFormat::Qwen3 : ChatFormat::ChatMl;
  return std::nullopt;
}

void check_chat_format(ChatFormat format, const Tokenizer& tokenizer) {
  std::vector<std::string> needed;
  if (format == ChatFormat::Llama3)
    needed = {"<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"};
  else
    needed = {"<|im_start|>", "<|im_end|>"};
  for (const std::string& t : needed)
    if (!tokenizer.added_tokens().by_content(t))
      fail("chat format {}: the tokenizer ({}) has no {} token", chat_format_name(format), tokenizer.source(), t);
}

std::vector<ChatSegment> render_chat(ChatFormat format, const std::vector<ChatMessage>& messages,
                                     const std::string& bos_token) {
  for (size_t i = 0; i < messages.size(); ++i) check_role(messages[i], i);
  Render r;
  if (messages.empty()) return r.segments;
  switch (format) {
    case ChatFormat::ChatMl:
      for (const ChatMessage& m : messages) {
        const bool answer = m.role == "assistant";
        r.text("<|im_start|>" + m.role + "\n");
        r.content(m.content, answer);
        r.text("<|im_end|>", answer);
        r.text("\n");
      }
      break;
    case ChatFormat::Qwen3: render_qwen3(r, messages); break;
    case ChatFormat::Llama3:
      r.text(bos_token);
      for (const ChatMessage& m : messages) {
        const bool answer = m.role == "assistant";
        r.text("<|start_header_id|>" + m.role + "<|end_header_id|>\n\n");
        r.content(trim(m.content), answer);
        r.text("<|eot_id|>", answer);
      }
      break;
  }
  return r.segments;
}

}  // namespace zt
