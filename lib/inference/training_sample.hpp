#pragma once
// training.sample_every: every N steps (and after the last) a short sample of what the model
// writes, as llm.c prints one: training.sample_tokens tokens drawn at temperature 1 after
// training.sample_prompt (the start of a document when empty), seeded by training.seed + the step.
// Every rank generates (through the engine's hooks, which gather the weights collectively at ZeRO
// stage 3); the ranks compute the same tokens, and rank 0 logs the text.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "core/param_hooks.hpp"
#include "inference/text_codec.hpp"
#include "model/gpt.hpp"

namespace zt {

class TrainingSample {
public:
  // Off when training.sample_every is 0. Loads `tokenizer`, the one the run found for its text
  // (training.sample_tokenizer, the model directory's, or the one its data records:
  // train/run_data.hpp); throws zt::Error naming the key when the text cannot be told (another
  // vocabulary than 256 without a tokenizer, a tokenizer with ids beyond the model's) or the prompt
  // leaves no room in seq_len positions.
  TrainingSample(const config::TrainingConfig& training, const std::string& tokenizer, int model_vocab, int seq_len);

  bool due(int64_t step, int64_t last_step) const;
  struct Sample {
    std::string text;  // training.sample_prompt and its continuation
    int tokens = 0;    // new tokens (fewer than training.sample_tokens when the text ended)
  };
  // Collective: every rank calls it at the same step. before_forward runs before each forward (the
  // engine's begin_micro_batch).
  Sample generate(Gpt& model, ParamHooks& weights, int64_t step, const std::function<void()>& before_forward);

private:
  int64_t every_ = 0;
  uint64_t seed_ = 0;
  int tokens_ = 0;
  std::optional<TextCodec> codec_;
  std::vector<int32_t> prompt_;
  std::string prompt_text_;  // what the sample shows of the prompt: the text given (not the separator)
};

}  // namespace zt
