#include "data/model_data.hpp"

namespace zt {

ModelData open_model_data(const ModelDataRequest& request, const std::optional<TokenizerReference>& model,
                          const ModelData* alongside) {
  ModelData m;
  m.what = request.judgement.what;
  m.data = open_dataset(request.sources, request.format, request.stream_seed, request.tokenizer);
  m.tokenizer = read_data_tokenizer(*m.data, request.judgement);
  if (model) judge_data_tokenizer(m.tokenizer, *model, request.judgement);
  if (alongside && m.tokenizer.identity && alongside->tokenizer.identity)
    judge_data_tokenizer(m.tokenizer,
                         {*alongside->tokenizer.identity,
                          "the tokenizer of " + alongside->what + " " + alongside->tokenizer.recorded_by},
                         request.judgement);
  m.data->check_vocab(request.vocab_size);
  return m;
}

}  // namespace zt
