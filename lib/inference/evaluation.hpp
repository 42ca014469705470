#pragma once
// The masked loss of a model over the micro-batches of a token file, the one evaluation loop of
// training (the validation loss, through the engine's hooks) and of `zerotrain eval --model
// DIR|CHECKPOINT --data FILE` (the weights resident on the device). The file is read as training
// reads it (docs/data.md: windows, or rows of the samples of record data), in order, rank r taking
// micro-batches r, r + W, ...; the loss is the sum of the token losses over the targets that count,
// so the world size changes only the order of the sums.
#include <cstdint>
#include <functional>
#include <string>

#include "core/param_hooks.hpp"
#include "data/data_sampler.hpp"
#include "model/gpt.hpp"

namespace zt {

class World;

struct LossSums {
  double loss = 0;       // token losses over the targets that count
  double counted = 0;    // targets that count
  double positions = 0;  // the micro-batches' positions (B x T each)
  // With output_router_logits: the micro-batches' load-balancing losses (each forward's own, before
  // its coefficient), and how many micro-batches that is (stand-ins left out).
  double aux = 0, aux_batches = 0;
};

// Room for one micro-batch of a sampler: inputs and targets of batch() x seq_len() tokens, and
// with samples their RowSegments (null for windows).
struct MicroBatchBuffers {
  int32_t* inputs;
  int32_t* targets;
  RowSegments* segments = nullptr;
};

// This rank's sums over `batches` micro-batches of `sampler` (an evaluation sampler: accumulation
// 1, no shuffle). Every rank runs every round, since a forward may be collective (stage 3 gathers
// the weights): a rank without a micro-batch in a round computes one that counts nothing;
// before_forward, when given, runs before each forward (the engine's begin_micro_batch).
LossSums evaluate_batches(Gpt& model, ParamHooks& weights, const DataSampler& sampler, int64_t batches,
                          const MicroBatchBuffers& buffers, const std::function<void()>& before_forward = {});

struct EvalOptions {
  std::string model, data, format = "auto";
  int seq_len = 0;          // 0: the model's max_seq_len, at most 1024, at most what the file holds
  int batch_size = 1;       // sequences per forward
  int64_t max_windows = 0;  // 0: every window (micro-batch) of the file
  std::string packing = "none", truncation = "truncate";  // record data's rows (data.packing, data.truncation)
  std::string device = "auto", dtype = "auto";  // dtype: inference_dtype (inference/model_source.hpp)
  std::string tokenizer_mismatch = "error";     // a token file of another tokenizer than the model's: error | warn
};

struct EvalResult {
  double loss = 0;          // nats per counted target; NaN without any
  int64_t counted = 0;      // targets that count
  int64_t targets = 0;      // targets read (positions of the micro-batches)
  int64_t windows = 0;      // micro-batches
  int seq_len = 0, batch_size = 0;
  std::string samples;      // how the rows of record data were made (DataSampler::describe), "" for windows
};

// `zerotrain eval`, collective over the world's ranks; every rank returns the same result. Throws
// zt::Error on bad input (the same on every rank: they read the same files), the message empty on
// every rank but the lowest failing one.
EvalResult evaluate_file(const EvalOptions& options, const World& world);

}  // namespace zt
