#include "inference/evaluation.hpp"

#include <fmt/format.h>

#include <cmath>

#include "comm/control_channel.hpp"
#include "comm/world.hpp"
#include "core/error.hpp"
#include "data/model_data.hpp"
#include "data/sampler.hpp"
#include "inference/device_weights.hpp"
#include "inference/model_source.hpp"
#include "kernels/backend.hpp"
#include "model/gpt.hpp"

namespace zt {

namespace {

constexpr int kDefaultMaxSeqLen = 1024;

int sequence_length(const EvalOptions& o, Packing packing, const GptShape& shape, const TokenDataset& data) {
  if (o.seq_len > shape.max_seq_len)
    fail("--seq-len {} exceeds the model's {} positions", o.seq_len, shape.max_seq_len);
  if (o.seq_len > 0) return o.seq_len;
  if (data.has_samples() && packing != Packing::Windows) return std::min(shape.max_seq_len, kDefaultMaxSeqLen);
  const int64_t fits = (data.size() - 1) / o.batch_size;  // a window of B·T + 1 tokens
  if (fits < 1) fail("{}: {} tokens hold no window of {} sequences", data.path(), data.size(), o.batch_size);
  return int(std::min<int64_t>({shape.max_seq_len, kDefaultMaxSeqLen, fits}));
}

}  // namespace

LossSums evaluate_batches(Gpt& model, ParamHooks& weights, const DataSampler& sampler, int64_t batches,
                          const MicroBatchBuffers& b, const std::function<void()>& before_forward) {
  LossSums sums;
  RowSegments* segments = sampler.has_samples() ? b.segments : nullptr;
  for (int64_t round = 0; round < sampler.eval_rounds(batches); ++round) {
    const BatchShape shape = sampler.fill_eval_batch(round, batches, b.inputs, b.targets, segments);
    const int64_t counted = count_targets(b.targets, shape.tokens());
    if (before_forward) before_forward();
    const float loss = model.forward(b.inputs, b.targets, shape.batch, shape.seq, weights, segments);
    if (counted > 0) {
      sums.loss += double(loss) * double(counted);
      sums.counted += double(counted);
    }
    if (!shape.stand_in) sums.positions += double(shape.tokens());
    if (!shape.stand_in && model.shape().moe.enabled() && model.shape().moe.output_router_logits) {
      sums.aux += model.aux_loss();
      sums.aux_batches += 1;
    }
  }
  return sums;
}

namespace {

// This rank's share: the sums over its windows, and where it computed them.
struct Share {
  double sums[3] = {0, 0, 0};  // token losses, targets that count, positions read
  EvalResult result;        // everything but the loss and the counts
  Backend* backend = nullptr;
};

Share evaluate_share(const EvalOptions& o, const World& world) {
  const int W = world.size(), R = world.rank();
  if (o.batch_size <= 0) fail("--batch-size {}: expected a positive number of sequences", o.batch_size);
  if (o.seq_len < 0) fail("--seq-len {}: expected a positive number of tokens", o.seq_len);
  LoadedModel loaded = load_model(o.model);
  const GptShape& shape = loaded.shape;
  const TokenizerMismatch policy = kTokenizerMismatchNames.parse(o.tokenizer_mismatch, "--tokenizer-mismatch");
  const ModelDataRequest request{
      {o.data},         o.format,         0,
      loaded.tokenizer, shape.vocab_size, {"--data", "--tokenizer-mismatch warn", policy, R == 0}};
  const ModelData opened = open_model_data(request, loaded.tokenizer_reference);
  const TokenDataset& data = *opened.data;
  RowOptions rows{kPackingNames.parse(o.packing, "--packing"), Padding::Longest,
                  kTruncationNames.parse(o.truncation, "--truncation"), 0};
  const int T = sequence_length(o, rows.packing, shape, data), B = o.batch_size;
  rows.seq_len = T;
  const std::unique_ptr<DataSampler> sampler = make_sampler(data, rows, B, W, R, 1, /*shuffle=*/false, 0);
  const int64_t windows = sampler->eval_batches(std::max<int64_t>(0, o.max_windows));

  Share share;
  const DType dtype = inference_dtype(o.dtype, loaded);
  share.backend = &select_backend(kDeviceChoiceNames.parse(o.device, "--device"), world.info().local_rank,
                                  world.info().local_size, compute_dtype(dtype));
  Gpt model(shape, B, T, /*recompute=*/true, *share.backend);
  DeviceWeights weights(model.layout(), loaded.weights.data(), *share.backend, dtype);
  loaded.weights.reset();

  std::vector<int32_t> inputs(size_t(B) * T), targets(inputs.size());
  RowSegments segments(share.backend->device, MemSpace::Host, B, T);
  const LossSums sums =
      evaluate_batches(model, weights, *sampler, windows, {inputs.data(), targets.data(), &segments});
  share.sums[0] = sums.loss;
  share.sums[1] = sums.counted;
  share.sums[2] = sums.positions;
  share.result.windows = windows;
  if (sampler->has_samples()) share.result.samples = sampler->describe();
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
  comm->control().all_reduce_sum(share.sums, 3);
  EvalResult r = share.result;
  r.counted = int64_t(share.sums[1]);
  r.targets = int64_t(share.sums[2]);
  r.loss = r.counted > 0 ? share.sums[0] / share.sums[1] : NAN;
  return r;
}

}  // namespace zt
