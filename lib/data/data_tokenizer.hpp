#pragma once
// The tokenizer a dataset's token files were made with, as their records say
// (data/token_file_info.hpp), and the judgement of it against the tokenizer the model's ids belong
// to: training (data.train, data.val), `zerotrain eval --data` and the start of a fine-tune refuse
// a file whose ids are another tokenizer's, naming both (docs/data.md, "Which tokenizer made the
// tokens").
#include <optional>
#include <string>
#include <vector>

#include "data/dataset.hpp"
#include "data/tokenizer_identity.hpp"

namespace zt {

struct DataTokenizer {
  std::optional<TokenizerIdentity> identity;  // the tokenizer the files record; none when none does
  std::string recorded_by;                    // the first file that records it
  std::vector<std::string> unrecorded;        // token files that record no tokenizer (llm.c's, older ones)
};

// What the model's ids are known to mean, and where that is known from ("the tokenizer of the model
// directory X").
struct TokenizerReference {
  TokenizerIdentity identity;
  std::string where;
};

// How a judgement speaks: the key or option it names, and the setting that overrides a refusal.
struct TokenizerJudgement {
  std::string what;      // "data.train", "--data"
  std::string override;  // "--set data.tokenizer_mismatch=warn", "--tokenizer-mismatch warn"
  TokenizerMismatch policy = TokenizerMismatch::Error;
  bool speak = true;     // warnings are logged (rank 0)
};

// The records beside the dataset's token files (llm.c files and raw uint16 files; text and
// synthetic data have none). Files of one dataset that record different tokenizers are an error
// naming both, unless the judgement allows it (then a warning). A record that does not belong to
// its file is an error naming it.
DataTokenizer read_data_tokenizer(const TokenDataset& data, const TokenizerJudgement& judgement);

// Fails (zt::Error) when the data records another tokenizer than `reference`, naming both, under
// TokenizerMismatch::Error; warns under Warn. Files that record none get a warning when there is a
// reference to compare with.
void judge_data_tokenizer(const DataTokenizer& data, const TokenizerReference& reference,
                          const TokenizerJudgement& judgement);

// The same for a tokenizer given to read and write a model's text (`generate --tokenizer`): another
// than the model's is refused, naming both, under TokenizerMismatch::Error.
void judge_given_tokenizer(const TokenizerIdentity& given, const TokenizerReference& reference,
                           const TokenizerJudgement& judgement);

}  // namespace zt
