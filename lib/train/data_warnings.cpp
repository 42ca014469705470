#include "train/data_warnings.hpp"

#include <spdlog/spdlog.h>

namespace zt {

void warn_about_vocab_coverage(const TokenDataset& data, int model_vocab) {
  if (data.format() != TokenFormat::Text || model_vocab <= data.vocab_size()) return;
  spdlog::warn("data.train {}: text is read as bytes, so its token ids cover {} of the model's {} "
               "(model.vocab_size); for GPT-2 tokens, convert the text to an llm.c .bin file first "
               "with `zerotrain tokenize` (docs/data.md)",
               data.path(), data.vocab_size(), model_vocab);
}

}  // namespace zt
