#pragma once
// Chat formats: a conversation rendered as the model's chat template renders it (what
// transformers' apply_chat_template gives, without a Jinja engine), as segments that say which
// text is the template's (its special tokens count as such) and which tokens are the assistant's
// answers (the targets that count in the loss: the answer and its end-of-turn token).
//
//   chatml    <|im_start|>ROLE\nCONTENT<|im_end|>\n for each message (no default system message)
//   qwen2.5   ChatML with Qwen2.5-Instruct's default system message ("You are Qwen, created by
//             Alibaba Cloud. You are a helpful assistant.") when the conversation has none; tools
//   qwen3     ChatML with Qwen3's thinking blocks: the answers after the last question get
//             <think>\nREASONING\n</think>\n\n (empty for the last one without reasoning); reasoning
//             comes from "reasoning_content" or from <think>...</think> in the content, and is
//             dropped from the earlier answers; tools
//   llama3    <|begin_of_text|> then <|start_header_id|>ROLE<|end_header_id|>\n\nCONTENT<|eot_id|>
//             with CONTENT trimmed of whitespace (Llama 3's template)
//   llama3.1  Llama 3 with Llama 3.1's system header, always there: "Cutting Knowledge Date:
//             December 2023\nToday Date: 26 Jul 2024\n\n" before the system message (Llama 3.1,
//             3.2 and 3.3 Instruct; 3.2's template writes today's date where transformers runs
//             it, this writes the date the template writes without one); tools, one call a turn
//   llama2    <s>[INST] QUESTION [/INST] ANSWER </s> per turn, the system message in the first
//             question as <<SYS>>\nSYSTEM\n<</SYS>>\n\n, questions and answers stripped
//             (Llama-2-chat's template)
//   mistral   <s> then " [INST] QUESTION [/INST] ANSWER</s>" per turn, the system message and a
//             blank line before the first question (Mistral-7B-Instruct-v0.2's template,
//             mistral-common's v1)
//   gemma     <bos> then <start_of_turn>ROLE\nCONTENT<end_of_turn>\n per message, the assistant's role
//             written "model", CONTENT trimmed, the system message and a blank line at the start of
//             the first user turn (Gemma 3's template; Gemma 2's writes the same without a system
//             message, which it refuses)
//
// Tools (the formats that have them): the conversation's function signatures in the system
// message (Qwen) or the first user message (Llama 3.1), assistant messages with tool calls, and
// tool messages with the calls' results, each written as the template writes it.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/name_table.hpp"
#include "tokenizer/tokenizer.hpp"

namespace zt {

enum class ChatFormat { ChatMl, Qwen25, Qwen3, Llama3, Llama31, Llama2, Mistral, Gemma };

// --chat-format's names; for messages, kChatFormatNames.list(",").
inline constexpr auto kChatFormatNames = name_table<ChatFormat>({{ChatFormat::ChatMl, "chatml"},
                                                                 {ChatFormat::Qwen25, "qwen2.5"},
                                                                 {ChatFormat::Qwen3, "qwen3"},
                                                                 {ChatFormat::Llama3, "llama3"},
                                                                 {ChatFormat::Llama31, "llama3.1"},
                                                                 {ChatFormat::Llama2, "llama2"},
                                                                 {ChatFormat::Mistral, "mistral"},
                                                                 {ChatFormat::Gemma, "gemma"}});
bool chat_format_has_tools(ChatFormat format);
// The ids of the tokens that end a text or a turn in `tokenizer`: its eos_token, those the chat
// formats write at a turn's end (<|eot_id|>, <|eom_id|>, <|im_end|>, </s>, <end_of_turn>) and those models write
// at a text's (<|endoftext|>, <|end_of_text|>); what generation stops at.
std::vector<int32_t> end_token_ids(const Tokenizer& tokenizer);

// The format a chat template (tokenizer_config.json's chat_template) is, by the text only that
// template writes: nothing for a template that is none of them.
std::optional<ChatFormat> chat_format_of_template(std::string_view chat_template);
// What a template that is none of the formats but resembles one is (an [INST] template of another
// Mistral version), for the message that refuses it; empty for any other.
std::string unrendered_chat_template(std::string_view chat_template);
// The tokenizer's format: its chat template's when it has one, else the one its special tokens call
// for (<|start_header_id|>: llama3; <|im_start|>: qwen3 with <think>, else chatml; <start_of_turn>:
// gemma), or nothing.
// `how` (when given) gets what told it: "its chat template" or "its special tokens".
std::optional<ChatFormat> chat_format_of(const Tokenizer& tokenizer, std::string* how = nullptr);
// Fails (zt::Error) when the tokenizer lacks a token the format writes.
void check_chat_format(ChatFormat format, const Tokenizer& tokenizer);

struct ToolCall {
  std::string name;
  nlohmann::ordered_json arguments;  // an object as a rule; a string is written as each template writes one
};

struct ChatMessage {
  std::string role;  // system, user, assistant or tool
  std::string content;
  std::optional<std::string> reasoning = {};  // qwen3: reasoning_content
  std::vector<ToolCall> tool_calls = {};      // an assistant's
  std::optional<bool> loss = {};              // whether an assistant's answer counts (unset: it does)
};

struct Conversation {
  std::vector<ChatMessage> messages;
  std::vector<nlohmann::ordered_json> tools;  // the function signatures offered
};

struct ChatOptions {
  std::string bos_token = {};      // what Llama 3's templates start with, Llama 2's questions too
  std::string eos_token = {};      // what ends Llama 2's and Mistral's answers
  bool generation_prompt = false;  // end with the assistant's header (apply_chat_template's add_generation_prompt)
};

struct ChatSegment {
  std::string text;
  bool template_text;  // the template's own text: special tokens in it are tokens
  bool counted;        // part of an assistant's answer
};

// Fails (zt::Error) on what the format does not render: a role, tools or tool calls where it has
// none, more tool calls in a turn than it writes; messages[i] names the message.
std::vector<ChatSegment> render_chat(ChatFormat format, const Conversation& conversation, const ChatOptions& options);
// The segments as Tokenizer::encode takes them: views of `segments`, which must outlive them.
std::vector<TextSegment> text_segments(const std::vector<ChatSegment>& segments);
// What the templates' bos_token writes: tokenizer_config.json's, else <s> where that is a token of
// the tokenizer, else Llama 3's <|begin_of_text|>.
std::string chat_bos_token(const Tokenizer& tokenizer);
// What the templates' eos_token writes: tokenizer_config.json's, else </s>.
std::string chat_eos_token(const Tokenizer& tokenizer);

}  // namespace zt
