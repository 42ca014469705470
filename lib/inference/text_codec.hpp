#pragma once
// How a model's tokens and text relate when it generates: through the tokenizer its data was made
// with, or byte for byte for a model of 256 tokens trained on text read as bytes (data.format
// text, the shipped corpus).
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace zt {

class Tokenizer;

class TextCodec {
public:
  static TextCodec bytes();
  // Tokenizer::load(path); errors name the path.
  static TextCodec tokenizer(const std::string& path);
  // The tokenizer at `path` when there is one; else bytes for a vocabulary of 256; else an error
  // saying that `option` must name the tokenizer.
  static TextCodec for_model(const std::string& path, int model_vocab, const std::string& option);

  // The ids a prompt starts a document with: the tokenizer's document separator (the token
  // `zerotrain tokenize` puts before every document) unless the text already begins with it, then
  // the text's ids, special tokens written in it included. Bytes: the bytes.
  std::vector<int32_t> prompt(std::string_view text) const;
  // The ids of a chat's prompt: the user's `text` (after a `system` message when there is one) in
  // the tokenizer's chat format (`format` when not empty: a kChatFormatNames name), ending with
  // the assistant's header to answer after (apply_chat_template's add_generation_prompt): its ids,
  // as `zerotrain tokenize` writes a conversation. Fails (zt::Error) without a format.
  std::vector<int32_t> chat_prompt(std::string_view text, const std::optional<std::string>& system,
                                   const std::string& format) const;
  // The ids of an empty document's start: the separator, or a line break for bytes.
  std::vector<int32_t> document_start() const;
  std::string decode(std::span<const int32_t> ids) const;
  // A token that ends a document or a turn (the separator, the end-of-text and end-of-turn tokens):
  // generation stops there.
  bool ends_text(int32_t id) const;
  int vocab_size() const;
  const std::string& name() const { return name_; }  // "bytes", or the tokenizer's source

private:
  std::shared_ptr<const Tokenizer> tokenizer_;  // null: bytes
  std::vector<int32_t> stops_;
  int32_t separator_ = -1;
  std::string name_;
};

}  // namespace zt
