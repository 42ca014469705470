#include "train/tokenizer_shipping.hpp"

#include <spdlog/spdlog.h>

#include "data/data_tokenizer.hpp"
#include "inference/model_tokenizer.hpp"

namespace zt {

void choose_shipped_tokenizer(HfOutput& output, const std::optional<TokenizerIdentity>& data_tokenizer,
                              TokenizerMismatch policy, const std::string& what, const std::string& override) {
  if (!data_tokenizer) return;  // data of llm.c's scripts or an older zerotrain: the model directory's, as before
  const std::optional<TokenizerReference> model =
      output.tokenizer_dir.empty() ? std::nullopt : tokenizer_of_model_directory(output.tokenizer_dir).reference;
  const bool model_has_one = model.has_value();
  if (model_has_one) {
    if (same_tokenizer(*data_tokenizer, model->identity)) return;
    const TokenizerJudgement judgement{what, override, policy, true};
    judge_data_tokenizer({data_tokenizer, "the run's data", {}}, *model, judgement);  // refuses under error
  }
  if (!tokenizer_files_unchanged(*data_tokenizer)) {
    spdlog::warn("{}: the tokenizer the run's data was made with, {}, is no longer there as it was: {}", what,
                 describe(*data_tokenizer),
                 model_has_one ? "the model directory's ships instead" : "no tokenizer ships with the model");
    return;
  }
  output.tokenizer_dir = tokenizer_directory(*data_tokenizer);
}

}  // namespace zt
