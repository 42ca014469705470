#pragma once
// Data that trains without an error but not as the user likely meant.
#include "data/dataset.hpp"

namespace zt {

// Text read as bytes has token ids 0..255 only: a model with a larger vocabulary (GPT-2's 50257)
// trains, but never sees most of its embeddings. One warning, naming the file and both sizes.
void warn_about_vocab_coverage(const TokenDataset& data, int model_vocab);

}  // namespace zt
