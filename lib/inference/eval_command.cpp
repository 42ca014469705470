#include "inference/eval_command.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cmath>

#include "comm/control_channel.hpp"
#include "comm/world.hpp"
#include "core/error.hpp"
#include "data/dataset.hpp"
#include "data/sampler.hpp"
#include "inference/device_weights.hpp"
#include "inference/model_options.hpp"
#include "inference/model_source.hpp"
#include "kernels/backend.hpp"
#include "model/gpt.hpp"

namespace zt {

namespace {

constexpr int kDefaultMaxSeqLen = 1024;

int sequence_length(const EvalOptions& o, const GptShape& shape, const TokenDataset& data) {
  if (o.seq_len > shape.max_seq_len)
    fail("--seq-len {} exceeds the model's {} positions", o.seq_len, shape.max_seq_len);
  if (o.seq_len > 0) return o.seq_len;
  const int64_t fits = (data.size() - 1) / o.batch_size;  // a window of B·T + 1 tokens
  if (fits < 1) fail("{}: {} tokens hold no window of {} sequences", data.path(), data.size(), o.batch_size);
  return int(std::min<int64_t>({shape.max_seq_len, kDefaultMaxSeqLen, fits}));
}

}  // namespace

namespace {

// This rank's share: the sums over its windows, and where it computed them.
struct Share {
  double sums[2] = {0, 0};  // token losses, targets that count
  EvalResult result;        // everything but the loss and the counts
  Backend* backend = nullptr;
};

Share evaluate_share(const EvalOptions& o, const World& world) {
  const int W = world.size(), R = world.rank();
  if (o.batch_size <= 0) fail("--batch-size {}: expected a positive number of sequences", o.batch_size);
  if (o.seq_len < 0) fail("--seq-len {}: expected a positive number of tokens", o.seq_len);
  LoadedModel loaded = load_model(o.model);
  const GptShape& shape = loaded.shape;
  const std::unique_ptr<TokenDataset> data = open_dataset(o.data, o.format);
  data->check_vocab(shape.vocab_size);
  const int T = sequence_length(o, shape, *data), B = o.batch_size;
  const BatchSampler sampler(*data, B, T, W, R, 1, /*shuffle=*/false, 0);
  const int64_t windows = sampler.eval_windows(std::max<int64_t>(0, o.max_windows));

  Share share;
  share.backend = &select_backend(o.device, world.info().local_rank, world.info().local_size,
                                  dtype_from_name(o.dtype));
  Gpt model(shape, B, T, /*recompute=*/true, *share.backend);
  DeviceWeights weights(model.layout(), loaded.weights.data(), *share.backend);
  loaded.weights.reset();

  // Windows r, r + W, ... of this rank.
  std::vector<int32_t> inputs(size_t(B) * T), targets(inputs.size());
  for (int64_t round = 0; round < sampler.eval_rounds(windows); ++round) {
    if (!sampler.fill_eval(round, windows, inputs.data(), targets.data())) continue;  // window round·W + R
    const float loss = model.forward(inputs.data(), targets.data(), B, T, weights);
    if (model.counted_targets() > 0) {
      share.sums[0] += double(loss) * model.counted_targets();
      share.sums[1] += model.counted_targets();
    }
  }
  share.result.windows = windows;
  share.result.targets = windows * B * T;
  share.result.seq_len = T;
  share.result.batch_size = B;
  return share;
}

}  // namespace

EvalResult evaluate_file(const EvalOptions& o, const World& world) {
  Share share;
  std::string error;
  try {
    share = evaluate_share(o, world);
  } catch (const std::exception& e) {
    error = e.what();
  }
  // The ranks agree before the collective: one that failed does not leave the others waiting.
  const int first = world.first_failure(!error.empty());
  if (first >= 0) throw Error(first == world.rank() ? error : "");
  std::unique_ptr<Communicator> comm = world.communicator(share.backend->device, 600.0);
  comm->control().all_reduce_sum(share.sums, 2);
  EvalResult r = share.result;
  r.counted = int64_t(share.sums[1]);
  r.loss = r.counted > 0 ? share.sums[0] / share.sums[1] : NAN;
  return r;
}

EvalCommand::EvalCommand(CLI::App& app) {
  command_ = app.add_subcommand("eval", "the loss and perplexity of a trained model over a token file (docs/data.md)");
  command_->footer(R"(--model: a checkpoint or GPT-2 weights, as for generate. --data: a token file as training reads
it (data.format auto: llm.c .bin with its loss mask when one lies beside it, .u16, text as bytes).
The file is cut into windows of B x T + 1 tokens as training cuts it, read in order; several ranks
(scripts/launch.sh -n N) share the windows and give the same loss up to the order of the sums.

Examples:
  zerotrain eval --model checkpoints --data data/tinytext/val.txt
  scripts/launch.sh -n 4 -- build/zerotrain eval --model hf_model --data val.bin --seq-len 1024
)");
  add_model_options(*command_, options_.model, options_.device, options_.dtype);
  command_->add_option("--data", options_.data, "the token file")->required();
  command_->add_option("--format", options_.format, "auto, llmc, uint16 or text (data.format)")
      ->capture_default_str();
  command_->add_option("--seq-len", options_.seq_len,
                       "tokens per sequence (default: the model's positions, at most 1024 and what the file holds)");
  command_->add_option("--batch-size", options_.batch_size, "sequences per forward")->capture_default_str();
  command_->add_option("--max-windows", options_.max_windows, "evaluate the first N windows only (0: all)")
      ->capture_default_str();
}

bool EvalCommand::parsed() const { return command_->parsed(); }

int EvalCommand::run(int argc, char** argv) const {
  World world(argc, argv);
  EvalResult r;
  const auto start = std::chrono::steady_clock::now();
  try {
    r = evaluate_file(options_, world);
  } catch (const std::exception& e) {
    if (*e.what()) std::fprintf(stderr, "error: eval: %s\n", e.what());  // the lowest failing rank speaks for all
    return 1;
  }
  if (world.rank() != 0) return 0;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("eval: %s: loss %.4f, perplexity %.3f, over %lld targets that count of %lld (%lld windows of %d x %d "
              "tokens) on %d rank%s in %.1f s\n",
              options_.data.c_str(), r.loss, std::exp(r.loss), static_cast<long long>(r.counted),
              static_cast<long long>(r.targets), static_cast<long long>(r.windows), r.batch_size, r.seq_len,
              world.size(), world.size() == 1 ? "" : "s", seconds);
  return 0;
}

}  // namespace zt
