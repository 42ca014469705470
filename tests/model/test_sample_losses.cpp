// The done-when of samples (docs/data.md, "Samples"): record data tokenized to a file with its
// sample index, made into micro-batches by the sampler (one sample a row padded to the longest row
// or to seq_len, or packed rows), gives every sample the loss it has run alone (rel 1e-6, fp32),
// and no token of a micro-batch outside a sample (another sample, padding) changes that loss.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "data/temp_dir.hpp"
#include "model/gpt.hpp"
#include "packed_rows.hpp"
#include "sample_losses.hpp"

using namespace zt;
using namespace zt::test;

TEST_CASE("packed and padded rows of record data give each sample its loss alone", "[model][packed][samples]") {
  // GPT-2's learned positions, and rotary positions with grouped-query attention and q/k norms, a
  // sliding-window layer too.
  const std::string preset = GENERATE(as<std::string>{}, "toy", "qwen3-tiny", "qwen3-tiny+window");
  INFO(preset);
  const GptShape shape = model_test_shape(preset);
  constexpr int kSeq = 72, kBatch = 3;
  TempDir dir;
  // Samples across attention's 64-row blocks, of one token, and one longer than seq_len (truncated).
  const auto data = write_record_data(dir.file("chat.bin"), {9, 30, 1, 25, 64, 3, 80, 17, 40, 5}, shape.vocab_size, 3);
  Gpt model(shape, kBatch, kSeq);
  ResidentParams params(model.layout());
  model.init_params(params.params.data(), 0, model.layout().total, 5);
  const ForwardLoss forward = [&](const int32_t* inputs, const int32_t* targets, int B, int T,
                                  const RowSegments* segments) {
    return model.forward(inputs, targets, B, T, params, segments);
  };
  const RowOptions layouts[] = {{Packing::None, Padding::Longest, Truncation::Truncate, kSeq},
                                {Packing::None, Padding::MaxLength, Truncation::Truncate, kSeq},
                                {Packing::Pack, Padding::Longest, Truncation::Truncate, kSeq}};
  for (const RowOptions& o : layouts) {
    const SampleSampler sampler(*data, o, kBatch, 1, 0, 1, false, 1);
    INFO(sampler.describe());
    const SampleLosses got = losses_in_micro_batches(sampler, shape.vocab_size, cpu_device(), MemSpace::Host, forward);
    require_losses_of_samples_alone(*data, got, kSeq, 1e-6, forward);
  }
}
