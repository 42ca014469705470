#pragma once
// The identity a tokenizer's files give (data/tokenizer_identity.hpp, which also says which files a
// tokenizer path stands for): what a token file records of the tokenizer that made it and what a
// model directory's tokenizer is compared with.
#include <string>

#include "data/tokenizer_identity.hpp"

namespace zt {

class Tokenizer;

// The identity of the tokenizer at `path`: its files hashed, the path made absolute; with the
// tokenizer loaded from it, its kind and number of ids too.
TokenizerIdentity identify_tokenizer(const std::string& path, const Tokenizer* loaded = nullptr);

}  // namespace zt
