#include "train/data_warnings.hpp"

#include <spdlog/spdlog.h>

#include "data/content_kind.hpp"
#include "data/tokenize_advice.hpp"

namespace zt {

void warn_about_text_data(const TokenDataset& data, const std::string& key, int model_vocab,
                          std::string_view tokenizer, bool coverage) {
  if (data.format() != TokenFormat::Text) return;
  const std::string whose = tokenizer.empty() ? "the model's tokenizer" : fmt::format("{}'s tokenizer", tokenizer);
  for (const DataFile& file : data.files()) {
    const std::string command =
        fmt::format("`{}`{}", tokenize_command(file.path, tokenizer), tokenizer_placeholder_note(tokenizer));
    if (holds_records(sniff_content(file.path)))
      spdlog::warn("{} {}: holds JSON records but is read as text (bytes), so the run trains on their JSON syntax; to "
                   "train on the records with {}, tokenize it first: {} (docs/data.md)",
                   key, file.path, whose, command);
    else if (coverage && model_vocab > data.vocab_size())
      spdlog::warn("{} {}: text is read as bytes, so its token ids cover {} of the model's {} (model.vocab_size); to "
                   "train on the ids of {}, tokenize it first: {} (docs/data.md)",
                   key, file.path, data.vocab_size(), model_vocab, whose, command);
  }
}

}  // namespace zt
