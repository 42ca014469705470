#include "inference/training_sample.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "inference/generation.hpp"
#include "inference/text_stream.hpp"

namespace zt {

TrainingSample::TrainingSample(const config::TrainingConfig& t, const std::string& tokenizer, int model_vocab,
                               int seq_len)
    : every_(t.sample_every), seed_(t.seed) {
  if (every_ == 0) return;
  if (tokenizer.empty() && model_vocab != 256)
    fail("training.sample_tokenizer: a sample of a model of {} tokens needs the tokenizer its data was made with, "
         "and none was found: the model directory has no tokenizer files and data.train records none (a token file "
         "made by `zerotrain tokenize` records it in NAME.meta.json); name one with this key (training.sample_every "
         "{}; a model of 256 tokens reads bytes)",
         model_vocab, every_);
  try {
    codec_ = tokenizer.empty() ? TextCodec::bytes() : TextCodec::tokenizer(tokenizer);
  } catch (const std::exception& e) {
    fail("training.sample_tokenizer: {}", e.what());
  }
  prompt_ = t.sample_prompt.empty() ? codec_->document_start() : codec_->prompt(t.sample_prompt);
  prompt_text_ = t.sample_prompt;
  for (int32_t id : prompt_)
    if (id >= model_vocab)
      fail("training.sample_tokenizer: {} gives the sample's prompt the id {}, beyond the model's vocabulary of {}",
           codec_->name(), id, model_vocab);
  if (int(prompt_.size()) >= seq_len)
    fail("training.sample_prompt: its {} tokens leave no room for a sample in data.seq_len {}", prompt_.size(),
         seq_len);
  tokens_ = int(std::min<int64_t>(t.sample_tokens, seq_len - int64_t(prompt_.size())));
}

bool TrainingSample::due(int64_t step, int64_t last_step) const {
  return every_ > 0 && (step % every_ == 0 || step == last_step);
}

TrainingSample::Sample TrainingSample::generate(Gpt& model, ParamHooks& weights, int64_t step,
                                     const std::function<void()>& before_forward) {
  TokenSampler sampler({1.0, 0, 1.0, seed_ + uint64_t(step)});
  GenerationLimits limits;
  limits.max_new_tokens = tokens_;
  limits.vocab = codec_->vocab_size();
  limits.stops = [&](int32_t id) { return codec_->ends_text(id); };
  TextStream stream([&](std::span<const int32_t> ids) { return codec_->decode(ids); }, prompt_);
  std::string text = prompt_text_;
  const Generated g = zt::generate(
      model, weights, prompt_, limits, sampler, [&](int32_t id) { text += stream.push(id); }, before_forward);
  return {text + stream.finish(), int(g.tokens.size())};
}

}  // namespace zt
