#pragma once
// `zerotrain generate`: a trained model continues a prompt, its text streamed as it is drawn
// (docs/data.md).
#include <cstdio>
#include <optional>
#include <string>

#include "inference/token_sampler.hpp"

namespace zt {

struct GenerateOptions {
  std::string model, tokenizer, prompt;
  int max_new_tokens = 256;
  SamplingOptions sampling;
  std::string device = "auto";  // cpu, cuda or auto (training.device's choice)
  std::string dtype = "auto";   // the weights' dtype: inference_dtype (inference/model_source.hpp)
  std::string tokenizer_mismatch = "error";  // a --tokenizer other than the model's: error | warn
  bool chat = false;                          // the prompt is a user's turn in the model's chat format
  std::optional<std::string> system;          // chat: the system message
  std::string chat_format;                    // chat: a kChatFormatNames name; empty: the tokenizer's
  bool dry_run = false;  // print what generation would hold on its device (inference/generate_plan.hpp), no more
};

// Writes the prompt and its continuation to `out` as the tokens come, then a line break (with
// `chat`, the answer only, which ends at the end of its turn); what ran and how fast on stderr. Bad
// input (a model path, a tokenizer, an empty prompt, an option) throws zt::Error saying what is
// wrong, before anything is written to `out`. With dry_run, `out` gets the memory plan instead and
// nothing is generated.
void run_generate(const GenerateOptions& options, std::FILE* out);

}  // namespace zt
