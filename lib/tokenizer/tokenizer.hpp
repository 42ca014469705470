#pragma once
// A Hugging Face tokenizer, in C++: tokenizer.json of the BPE kind (byte-level: GPT-2, Llama 3,
// Qwen2/2.5/3, Mistral-Nemo; SentencePiece-style with byte fallback: Llama 2, Mistral 7B), or
// GPT-2's vocab.json + merges.txt. Ids equal those of Hugging Face's `tokenizers` for the same text.
//
// encode: added tokens are found first (special ones only when asked: in documents their text is
// text, as llm.c's data scripts tokenize it); each stretch between them is normalized (NFC;
// SentencePiece's ▁ for spaces), cut into words by the pre-tokenizer (the Split regexes by
// hand-written scanners, split_pattern.hpp), and each word encoded by the BPE model (bpe.hpp).
// A Tokenizer is immutable once loaded; encode and decode may run on any number of threads.
#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/added_tokens.hpp"
#include "tokenizer/bpe.hpp"
#include "tokenizer/split_pattern.hpp"

namespace zt {

struct EncodeOptions {
  bool special_tokens = false;  // text spelling a special token is that token
  bool continuation = false;    // the text continues a document cut at cut_point(): nothing is prepended
};

// A stretch of text to encode together with its neighbours (a rendered chat: template text whose
// special tokens count as such, and message text whose do not), and whether its tokens are targets
// that count in the loss.
struct TextSegment {
  std::string_view text;
  bool special_tokens = false;
  bool counted = true;
};

class Tokenizer {
public:
  // `path`: a directory holding tokenizer.json (or vocab.json and merges.txt), a tokenizer.json, or
  // a vocab.json with merges.txt beside it. tokenizer_config.json beside it, when there is one,
  // gives the bos/eos tokens and the chat template. Every problem is a zt::Error naming the file
  // and, in tokenizer.json, the JSON path.
  static Tokenizer load(const std::string& path);
  // A tokenizer.json already parsed; `where` names it in messages.
  static Tokenizer from_json(const nlohmann::json& tokenizer_json, const std::string& where);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // Appends the ids of `text`.
  void encode(std::string_view text, std::vector<int32_t>& ids, EncodeOptions options = {}) const;
  std::vector<int32_t> encode(std::string_view text, EncodeOptions options = {}) const;
  // Appends the ids of the segments' text, encoded as one text (a word may span two segments), and
  // for each id whether it counts: whether its first byte lies in a counted segment.
  void encode(std::span<const TextSegment> segments, std::vector<int32_t>& ids, std::vector<uint8_t>& counted) const;

  // The text of ids (bytes: a cut through a character leaves its bytes incomplete).
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;

  // A position at or after `from` where the text may be cut so that encoding text[0, cut) and then
  // text[cut, end) as a continuation gives the ids of the whole: after a line break between two
  // ASCII letters, for tokenizers whose pre-tokenizer (or merges) never join across one. Nothing
  // when there is none, or the tokenizer cannot be cut.
  std::optional<size_t> cut_point(std::string_view text, size_t from) const;

  int32_t vocab_size() const { return vocab_size_; }  // the largest id + 1
  // "byte-level BPE", "BPE with byte fallback" or "BPE": what its model does with text.
  std::string_view kind() const;
  // The id of a token by its text (an added token, or a vocabulary entry as spelt there).
  std::optional<int32_t> token_id(std::string_view content) const;
  const AddedTokens& added_tokens() const { return added_; }
  const std::string& source() const { return source_; }
  // From tokenizer_config.json (empty when absent): "bos_token", "eos_token", "chat_template".
  const std::string& config_string(std::string_view key) const;
  // The token the post-processor puts before a sequence (Llama 2's <s>), if any.
  std::optional<int32_t> post_processor_bos() const { return post_bos_; }

  struct Pipeline;  // normalizers, pre-tokenizers, decoders (pipeline.hpp)

private:
  Tokenizer();
  void encode_stretch(std::string_view text, bool piece_start, bool input_start, std::vector<int32_t>& ids,
                      std::vector<uint32_t>* starts) const;
  void encode_text(std::string_view text, std::span<const std::pair<size_t, bool>> special_from,
                   bool continuation, std::vector<int32_t>& ids, std::vector<uint32_t>* starts) const;
  const AddedToken* added_token_of(int32_t id) const;  // nullptr for a vocabulary id
  friend class TokenizerLoader;

  std::unique_ptr<Pipeline> pipeline_;
  BpeModel model_;
  AddedTokens added_;
  std::vector<int32_t> added_index_;  // id -> index in added_.tokens(), or -1
  int32_t vocab_size_ = 0;
  std::optional<int32_t> post_bos_;
  std::string source_;
  std::string bos_token_, eos_token_, chat_template_;
  uint64_t serial_ = 0;  // tells thread-local word caches apart
};

// The token that separates documents, as llm.c's scripts separate them: the begin-of-text token
// where the tokenizer has one, else its end-of-text token; `name` gets its text.
int32_t document_separator(const Tokenizer& tokenizer, std::string& name);

}  // namespace zt
