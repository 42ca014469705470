#include "inference/text_codec.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "tokenizer/chat_format.hpp"
#include "tokenizer/tokenizer.hpp"

namespace zt {

TextCodec TextCodec::bytes() {
  TextCodec c;
  c.name_ = "bytes";
  return c;
}

TextCodec TextCodec::tokenizer(const std::string& path) {
  TextCodec c;
  auto t = std::make_shared<const Tokenizer>(Tokenizer::load(path));
  std::string separator_name;
  c.separator_ = document_separator(*t, separator_name);
  c.stops_.push_back(c.separator_);
  for (const int32_t id : end_token_ids(*t)) c.stops_.push_back(id);
  c.name_ = t->source();
  c.tokenizer_ = std::move(t);
  return c;
}

TextCodec TextCodec::for_model(const std::string& path, int model_vocab, const std::string& option) {
  if (!path.empty()) return tokenizer(path);
  if (model_vocab == 256) return bytes();
  fail("the model's {} tokens need the tokenizer its data was made with: give {} (a directory with tokenizer.json, "
       "or GPT-2's vocab.json + merges.txt)",
       model_vocab, option);
}

std::vector<int32_t> TextCodec::prompt(std::string_view text) const {
  if (!tokenizer_) {
    std::vector<int32_t> ids;
    for (char c : text) ids.push_back(int32_t(uint8_t(c)));
    return ids;
  }
  std::vector<int32_t> ids = tokenizer_->encode(text, {.special_tokens = true});
  if (ids.empty() || ids.front() != separator_) ids.insert(ids.begin(), separator_);
  for (int32_t& id : ids)
    if (id < 0) fail("the prompt: {} has no id for part of it", tokenizer_->source());
  return ids;
}

namespace {

ChatFormat chat_format_for(const Tokenizer& tokenizer, const std::string& name) {
  if (!name.empty()) {
    const auto format = kChatFormatNames.find(name);
    if (!format) fail("--chat-format {}: expected one of {}", name, kChatFormatNames.list(","));
    check_chat_format(*format, tokenizer);
    return *format;
  }
  std::string how;
  const auto format = chat_format_of(tokenizer, &how);
  if (format) return *format;
  if (how == "its chat template")
    fail("--chat: the tokenizer's chat template ({}) is none of the formats zerotrain renders: name one with "
         "--chat-format ({})", tokenizer.source(), kChatFormatNames.list(","));
  fail("--chat: the tokenizer ({}) has no chat template or chat tokens to tell its format by: name one with "
       "--chat-format ({})", tokenizer.source(), kChatFormatNames.list(","));
}

}  // namespace

std::vector<int32_t> TextCodec::chat_prompt(std::string_view text, const std::optional<std::string>& system,
                                            const std::string& format) const {
  if (!tokenizer_) fail("--chat: a model that reads bytes has no chat format; give --tokenizer");
  Conversation chat;
  if (system) chat.messages.push_back({"system", *system});
  chat.messages.push_back({"user", std::string(text)});
  const auto segments = render_chat(chat_format_for(*tokenizer_, format), chat,
                                    {.bos_token = chat_bos_token(*tokenizer_), .generation_prompt = true});
  std::vector<int32_t> ids;
  std::vector<uint8_t> counted;
  tokenizer_->encode(text_segments(segments), ids, counted);
  return ids;
}

std::vector<int32_t> TextCodec::document_start() const {
  if (!tokenizer_) return {int32_t('\n')};
  return {separator_};
}

std::string TextCodec::decode(std::span<const int32_t> ids) const {
  if (tokenizer_) return tokenizer_->decode(ids);
  std::string out;
  for (int32_t id : ids) out += char(uint8_t(id));
  return out;
}

bool TextCodec::ends_text(int32_t id) const { return std::find(stops_.begin(), stops_.end(), id) != stops_.end(); }

int TextCodec::vocab_size() const { return tokenizer_ ? tokenizer_->vocab_size() : 256; }

}  // namespace zt
