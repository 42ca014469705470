#pragma once
// Data that trains without an error but not as the user likely meant.
#include <string>
#include <string_view>

#include "data/dataset.hpp"

namespace zt {

// Text read as bytes (data.format text, or a .txt/.md file) has token ids 0..255 only:
//  - a file that holds JSON records trains on their JSON syntax, bytes and all;
//  - a model with a larger vocabulary than 256 trains, but never sees most of its embeddings
//    (`coverage`: said of the training data, where it matters).
// One warning per file, naming `key`, the file, and the `zerotrain tokenize` command that makes
// tokens of it with `tokenizer` (the model directory's, "" when unknown).
void warn_about_text_data(const TokenDataset& data, const std::string& key, int model_vocab,
                          std::string_view tokenizer, bool coverage);

}  // namespace zt
