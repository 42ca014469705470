#pragma once
// The files a tokenizer path stands for, as Tokenizer::load reads them, and the identity they give
// (data/tokenizer_identity.hpp): what a token file records of the tokenizer that made it and what a
// model directory's tokenizer is compared with.
#include <string>

#include "data/tokenizer_identity.hpp"

namespace zt {

class Tokenizer;

struct TokenizerFiles {
  std::string dir;                  // where tokenizer_config.json would lie
  std::string json;                 // tokenizer.json, or ""
  std::string vocab, merges;        // GPT-2's pair, when there is no tokenizer.json
};

// `path`: a directory holding tokenizer.json (else vocab.json and merges.txt), a tokenizer.json,
// or a vocab.json or merges.txt with the other beside it. An error names the path when it holds
// no tokenizer.
TokenizerFiles locate_tokenizer_files(const std::string& path);

// The identity of the tokenizer at `path`: its files hashed, the path made absolute; with the
// tokenizer loaded from it, its kind and number of ids too.
TokenizerIdentity identify_tokenizer(const std::string& path, const Tokenizer* loaded = nullptr);

}  // namespace zt
