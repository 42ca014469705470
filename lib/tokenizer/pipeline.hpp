#pragma once
// The steps around the BPE model that tokenizer.json describes: normalizers, pre-tokenizers and
// decoders, reduced to what the supported tokenizers use (tokenizer_load.cpp refuses the rest).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/split_pattern.hpp"
#include "tokenizer/tokenizer.hpp"

namespace zt {

struct Tokenizer::Pipeline {
  struct Normalizer {
    enum Kind { Nfc, Prepend, Replace } kind;
    std::string text{}, replacement{};  // Prepend: text; Replace: text -> replacement
  };
  enum class PrependScheme { Always, First, Never };
  struct Split {
    enum Kind { Pattern, Digits, BeforeDelimiter } kind;
    SplitPattern pattern = SplitPattern::Gpt2;
    bool individual_digits = false;
    std::string delimiter{};  // BeforeDelimiter: each occurrence starts a word (Metaspace's split)
    bool runs = false;        // BeforeDelimiter: a run of delimiters starts one word
  };
  struct Decoder {
    enum Kind { ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace } kind;
    std::string text{}, replacement{};  // Replace; Strip: text = the character; Metaspace: text = ▁
    int start = 0, stop = 0;        // Strip
    bool strip_first_space = false; // Metaspace: the first token loses the space its ▁ stood for
  };

  std::vector<Normalizer> normalizers;
  // The first pre-tokenizer's rewriting of the text before it is split.
  bool prefix_space = false;  // ByteLevel add_prefix_space: a space before a stretch that has none
  std::string metaspace;      // Metaspace: spaces become this, prepended by `metaspace_prepend`
  PrependScheme metaspace_prepend = PrependScheme::Never;
  std::vector<Split> splits;  // applied in order, each to the words of the one before
  std::vector<Decoder> decoders;
  bool decodes_bytes_only = false;  // the decoder is ByteLevel alone: ids' bytes concatenated
  bool cuttable = false;            // see Tokenizer::cut_point
};

}  // namespace zt
