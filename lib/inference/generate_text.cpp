#include "inference/generate_text.hpp"

#include <fmt/format.h>

#include <chrono>

#include "core/error.hpp"
#include "inference/device_weights.hpp"
#include "inference/generate_plan.hpp"
#include "inference/generation.hpp"
#include "inference/model_source.hpp"
#include "inference/text_codec.hpp"
#include "inference/text_stream.hpp"
#include "kernels/backend.hpp"
#include "model/gpt.hpp"
#include "tokenizer/tokenizer_files.hpp"

namespace zt {

namespace {

std::string how_it_ended(const Generated& g, int positions, bool chat) {
  switch (g.end) {
    case GenerationEnd::StopToken: return chat ? "ended at the end of its turn" : "ended by the text's end token";
    case GenerationEnd::ContextFull: return fmt::format("stopped at the model's {} positions", positions);
    case GenerationEnd::MaxTokens: break;
  }
  return "stopped at --max-new-tokens";
}

// The prompt's ids: the text, or with --chat a user's turn in the chat format; each within the
// model's vocabulary and positions.
std::vector<int32_t> prompt_ids(const GenerateOptions& o, const TextCodec& codec, const GptShape& shape) {
  if (!o.chat && (o.system || !o.chat_format.empty()))
    fail("{}: a system message and a chat format are for a chat: add --chat", o.system ? "--system" : "--chat-format");
  const std::vector<int32_t> prompt =
      o.chat ? codec.chat_prompt(o.prompt, o.system, o.chat_format) : codec.prompt(o.prompt);
  for (int32_t id : prompt)
    if (id >= shape.vocab_size)
      fail("{} gives the prompt the id {}, outside the model's vocabulary of {}: is it the tokenizer the model was "
           "trained with?",
           codec.name(), id, shape.vocab_size);
  if (int(prompt.size()) >= shape.max_seq_len)
    fail("--prompt: its {} tokens leave no room in the model's {} positions", prompt.size(), shape.max_seq_len);
  return prompt;
}

}  // namespace

void run_generate(const GenerateOptions& o, std::FILE* out) {
  if (o.prompt.empty()) fail("--prompt is empty: give the text the model continues");
  if (o.max_new_tokens <= 0) fail("--max-new-tokens {}: expected a positive number of tokens", o.max_new_tokens);
  TokenSampler sampler(o.sampling);
  const TokenizerJudgement judgement{"--tokenizer", "--tokenizer-mismatch warn",
                                     kTokenizerMismatchNames.parse(o.tokenizer_mismatch, "--tokenizer-mismatch")};
  LoadedModel loaded = load_model(o.model);
  const GptShape& shape = loaded.shape;
  if (!o.tokenizer.empty() && loaded.tokenizer_reference)
    judge_given_tokenizer(identify_tokenizer(o.tokenizer), *loaded.tokenizer_reference, judgement);
  const TextCodec codec = TextCodec::for_model(o.tokenizer.empty() ? loaded.tokenizer : o.tokenizer,
                                               shape.vocab_size, "--tokenizer");
  const std::vector<int32_t> prompt = prompt_ids(o, codec, shape);

  const DType dtype = inference_dtype(o.dtype, loaded);
  Backend& backend = select_backend(kDeviceChoiceNames.parse(o.device, "--device"), 0, 1, compute_dtype(dtype));
  const int positions = std::min<int>(shape.max_seq_len, int(prompt.size()) + o.max_new_tokens);
  if (o.dry_run) {
    std::fprintf(stderr, "generate: %s, %s; a prompt of %zu tokens; on %s\n", loaded.what.c_str(),
                 describe(shape).c_str(), prompt.size(), backend.device.name().c_str());
    std::fputs(format_generate_plan(plan_generate(shape, positions, backend.model)).c_str(), out);
    return;
  }
  Gpt model(shape, 1, positions, /*recompute=*/true, backend);  // one block's activations suffice
  DeviceWeights weights(model.layout(), loaded.weights.data(), backend, dtype);
  loaded.weights.reset();
  std::fprintf(stderr, "generate: %s, %s; text: %s; on %s\n", loaded.what.c_str(), describe(shape).c_str(),
               codec.name().c_str(), backend.device.name().c_str());

  if (!o.chat) std::fputs(o.prompt.c_str(), out);
  std::fflush(out);
  TextStream stream([&](std::span<const int32_t> ids) { return codec.decode(ids); }, prompt);
  GenerationLimits limits;
  limits.max_new_tokens = o.max_new_tokens;
  limits.vocab = codec.vocab_size();
  limits.stops = [&](int32_t id) { return codec.ends_text(id); };
  const auto start = std::chrono::steady_clock::now();
  const Generated g = generate(model, weights, prompt, limits, sampler, [&](int32_t id) {
    const std::string piece = stream.push(id);
    std::fwrite(piece.data(), 1, piece.size(), out);
    std::fflush(out);
  });
  const std::string rest = stream.finish() + "\n";
  std::fwrite(rest.data(), 1, rest.size(), out);
  std::fflush(out);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "generate: %zu tokens after a prompt of %zu in %.2f s (%.1f tokens/s), %s\n", g.tokens.size(),
               prompt.size(), seconds, double(g.tokens.size()) / std::max(seconds, 1e-9),
               how_it_ended(g, model.max_seq(), o.chat).c_str());
}

}  // namespace zt
