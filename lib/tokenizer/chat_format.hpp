#pragma once
// Chat formats: a conversation rendered as the model's chat template renders it (what
// transformers' apply_chat_template gives, without a Jinja engine), as segments that say which
// text is the template's (its special tokens count as such) and which tokens are the assistant's
// answers (the targets that count in the loss: the answer and its end-of-turn token).
//
//   chatml  <|im_start|>ROLE\nCONTENT<|im_end|>\n for each message (Qwen2/2.5 without their default
//           system message)
//   qwen3   ChatML with Qwen3's thinking blocks: the answers after the last question get
//           <think>\nREASONING\n</think>\n\n (empty for the last one without reasoning); reasoning
//           comes from "reasoning_content" or from <think>...</think> in the content, and is
//           dropped from the earlier answers
//   llama3  <|begin_of_text|> then <|start_header_id|>ROLE<|end_header_id|>\n\nCONTENT<|eot_id|>
//           with CONTENT trimmed of whitespace (Llama 3's template)
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zt {

class Tokenizer;

enum class ChatFormat { ChatMl, Qwen3, Llama3 };

std::optional<ChatFormat> chat_format_from_name(std::string_view name);
std::string_view chat_format_name(ChatFormat format);
// The format the tokenizer's special tokens call for (<|start_header_id|>: llama3; <|im_start|>:
// qwen3 with <think>, else chatml), or nothing.
std::optional<ChatFormat> chat_format_of(const Tokenizer& tokenizer);
// Fails (zt::Error) when the tokenizer lacks a token the format writes.
void check_chat_format(ChatFormat format, const Tokenizer& tokenizer);

struct ChatMessage {
  std::string role;  // system, user or assistant
  std::string content;
  std::optional<std::string> reasoning;  // qwen3: reasoning_content
};

struct ChatSegment {
  std::string text;
  bool template_text;  // the template's own text: special tokens in it are tokens
  bool counted;        // part of an assistant's answer
};

// Fails (zt::Error) on a role the format does not render.
std::vector<ChatSegment> render_chat(ChatFormat format, const std::vector<ChatMessage>& messages,
                                     const std::string& bos_token);

}  // namespace zt
