#pragma once
// Which tokenizer ships with a trained model (training.save_final, `zerotrain export`): the model
// directory's tokenizer files when the run's data was made with that tokenizer (or recorded none);
// the files of the tokenizer the data records when there is no model directory or it holds no
// tokenizer; and when the two differ, a refusal naming both, or with data.tokenizer_mismatch warn a
// warning and the data's tokenizer, whose ids the model was trained on (docs/data.md).
#include <optional>
#include <string>

#include "data/tokenizer_identity.hpp"
#include "hf/hf_writer.hpp"

namespace zt {

// `output.tokenizer_dir` holds the model directory the run started from ("" without one); it becomes
// the directory whose tokenizer files ship. `what` names the source for messages
// ("training.save_final", the checkpoint exported), `override` the setting that turns a refusal
// into a warning.
void choose_shipped_tokenizer(HfOutput& output, const std::optional<TokenizerIdentity>& data_tokenizer,
                              TokenizerMismatch policy, const std::string& what, const std::string& override);

}  // namespace zt
