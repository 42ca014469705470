#pragma once
// The BPE model of a Hugging Face tokenizer: a vocabulary and ranked merges of symbol pairs.
// A word (one pre-tokenized piece) starts as one symbol per byte (byte-level BPE: GPT-2, Llama 3,
// Qwen) or per character (SentencePiece-style BPE: Llama 2, Mistral; a character outside the
// vocabulary becomes its <0xXX> byte tokens, or the unknown token), and the adjacent pair of lowest
// merge rank is merged, the leftmost first, until no pair has a merge: Hugging Face's order, so
// ids come out equal.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace zt {

struct BpeOptions {
  bool byte_level = false;     // symbols are bytes, vocabulary entries spelt in GPT-2's alphabet
  bool ignore_merges = false;  // a word that is itself in the vocabulary is that token (Llama 3)
  bool byte_fallback = false;  // an unknown character becomes <0xXX> tokens
  bool fuse_unk = false;       // consecutive unknown characters become one unknown token
  std::string unk_token;       // empty: unknown characters are dropped
};

class BpeModel {
public:
  BpeModel() = default;
  // vocab: token spelling -> id; merges: pairs of spellings, in rank order. Errors (zt::Error) start
  // with `where` (the file) and name the entry.
  BpeModel(const std::vector<std::pair<std::string, int32_t>>& vocab,
           const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions options,
           const std::string& where);

  // Appends the ids of one word (raw bytes for byte-level BPE, normalized text otherwise). With
  // `lengths`, also the number of word bytes each id covers.
  void encode_word(std::string_view word, std::vector<int32_t>& ids, std::vector<uint32_t>* lengths = nullptr) const;

  const BpeOptions& options() const { return options_; }
  int32_t id_limit() const { return id_limit_; }  // the largest id + 1
  // The id of a vocabulary entry by its bytes (byte-level) or text.
  std::optional<int32_t> find(std::string_view key) const {
    const int32_t id = find_id(key);
    return id < 0 ? std::nullopt : std::optional<int32_t>(id);
  }
  // The bytes (byte-level) or text of an id; empty for an id the vocabulary lacks.
  std::string_view text_of(int32_t id) const;
  std::string_view spelling_of(int32_t id) const;  // as the vocabulary writes it
  // Whether the symbol that starts a line break ("\n", or its byte token) takes part in a merge:
  // when it does not, text cut after a line break encodes as the two halves do.
  bool line_break_merges() const { return line_break_merges_; }
  // Whether some entry holds `text` after something other than `text` (for SentencePiece's ▁:
  // when none does, no merge joins a word to the ▁ that starts the next one).
  bool joins_before(std::string_view text) const;

private:
  struct Merge {
    int32_t rank, result;
  };
  struct PairSlot {
    uint64_t key;
    Merge merge;
  };
  struct Symbol {
    int32_t id;
    uint32_t len;
  };

  using SpellingIndex = std::unordered_map<std::string_view, int32_t>;  // vocabulary spelling -> id

  // The constructor's steps, in order: ids checked and counted, the lookup by bytes or text, the
  // byte, ASCII and unknown tokens, the merges.
  SpellingIndex index_spellings(const std::vector<std::pair<std::string, int32_t>>& vocab, const std::string& where);
  void add_entries(const std::vector<std::pair<std::string, int32_t>>& vocab);
  void find_symbol_tokens(const SpellingIndex& by_spelling, const std::string& where);
  void add_merges(const std::vector<std::pair<std::string, std::string>>& merges, const SpellingIndex& by_spelling,
                  const std::string& where);
  const Merge* find_merge(int32_t left, int32_t right) const;
  int32_t find_id(std::string_view key) const;  // -1 when absent
  void initial_symbols(std::string_view word, std::vector<Symbol>& symbols) const;
  static void merge_short(const BpeModel& m, std::vector<Symbol>& symbols);
  static void merge_long(const BpeModel& m, std::vector<Symbol>& symbols);

  BpeOptions options_;
  std::vector<int32_t> entries_;        // open addressing by text_hash of the bytes or text: ids, -1 empty
  uint64_t entry_mask_ = 0;
  std::vector<std::string> text_;       // id -> bytes or text
  std::vector<std::string> spelling_;   // id -> vocabulary spelling
  std::vector<PairSlot> pairs_;         // open addressing; key 0 is empty (no pair (0, 0) merges... see .cpp)
  uint64_t pair_mask_ = 0;
  int32_t byte_ids_[256];               // byte-level: the token of each byte; else the <0xXX> token or -1
  int32_t ascii_ids_[128];              // char-level: the token of each ASCII character or -1
  int32_t unk_id_ = -1;
  int32_t id_limit_ = 0;
  bool line_break_merges_ = true;
};

}  // namespace zt
