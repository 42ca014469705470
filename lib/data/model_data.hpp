#pragma once
// The data a model reads, opened and judged one way for training (data.train, data.val) and for
// `zerotrain eval --data`: its files in their format (data/dataset.hpp), the tokenizer their records
// name against the one the model's ids belong to (data/data_tokenizer.hpp), then every id against
// the model's vocabulary, after the tokenizers: another tokenizer's ids say more than a range.
// Its sampler is make_sampler's (data/data_sampler.hpp), once the caller knows its rows.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/data_tokenizer.hpp"
#include "data/dataset.hpp"

namespace zt {

struct ModelDataRequest {
  std::vector<std::string> sources;  // read in order as one stream
  std::string format = "auto";       // data.format, --format
  uint64_t stream_seed = 0;          // synthetic data's stream (open_dataset)
  std::string tokenizer;             // the model's tokenizer, "" when unknown (the advice to tokenize records)
  int vocab_size = 0;                // the model's: every id below it
  TokenizerJudgement judgement;      // the key it is read for, and data.tokenizer_mismatch
};

struct ModelData {
  std::string what;  // the key it was read for (judgement.what)
  std::unique_ptr<TokenDataset> data;
  DataTokenizer tokenizer;  // what its files record
};

// Errors (zt::Error) name the key and the file. `model`: what the model's ids are known to mean,
// when that is known. `alongside`: data the same model reads beside it (data.train for data.val),
// whose recorded tokenizer must be this data's when both record one.
ModelData open_model_data(const ModelDataRequest& request, const std::optional<TokenizerReference>& model,
                          const ModelData* alongside = nullptr);

}  // namespace zt
