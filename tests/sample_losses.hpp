#pragma once
// Record data from file to model for the tests of samples (docs/data.md, "Samples"): samples
// written as `zerotrain tokenize` writes them (tokens, loss mask, sample index), each sample run
// alone, and the loss each sample gets inside the micro-batches a SampleSampler makes of them (one
// sample a row, padded, or packed), alone or with every other token of its micro-batch changed.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/ignored_target.hpp"
#include "core/rng.hpp"
#include "core/row_segments.hpp"
#include "data/dataset.hpp"
#include "data/sample_sampler.hpp"
#include "data/token_file_writer.hpp"

namespace zt::test {

// Writes samples of the given lengths (random tokens below `vocab`; the first third of each, its
// prompt, does not count as a target) to `path` with its mask and sample index, and opens it.
inline std::unique_ptr<TokenDataset> write_record_data(const std::string& path, const std::vector<int>& lengths,
                                                       int vocab, uint64_t seed) {
  Rng rng(seed);
  TokenFileWriter writer(path, vocab);
  for (int L : lengths) {
    std::vector<int32_t> tokens;
    std::vector<uint8_t> counted;
    for (int t = 0; t < L; t++) {
      tokens.push_back(int32_t(rng.below(uint64_t(vocab))));
      counted.push_back(t > L / 3);
    }
    const int64_t start = 0;
    writer.append(tokens, counted, std::span<const int64_t>(&start, 1));
  }
  TokenFileWriter::Outputs outputs;
  outputs.samples = true;
  writer.finish(outputs);
  return open_dataset(path, TokenFormat::LlmC);
}

// Sample k as a micro-batch of its own: its tokens (the first seq_len), the next token of the
// sample as each target where the mask counts it, none after its last token.
struct AloneSample {
  std::vector<int32_t> inputs, targets;
  int counted = 0;
};
inline AloneSample sample_alone(const TokenDataset& data, int64_t k, int seq_len) {
  const auto offsets = data.sample_offsets();
  const int n = int(std::min<int64_t>(offsets[size_t(k) + 1] - offsets[size_t(k)], seq_len));
  AloneSample s{std::vector<int32_t>(size_t(n)), std::vector<int32_t>(size_t(n), kIgnoredTarget)};
  data.read(offsets[size_t(k)], n, s.inputs.data());
  std::vector<uint8_t> counts(static_cast<size_t>(n));
  data.read_loss_mask(offsets[size_t(k)], n, counts.data());
  for (int t = 0; t + 1 < n; t++)
    if (counts[size_t(t) + 1]) {
      s.targets[size_t(t)] = s.inputs[size_t(t) + 1];
      ++s.counted;
    }
  return s;
}

// A forward pass: the mean loss over the targets that count, with the rows' segments (null: one
// sample a row).
using ForwardLoss = std::function<float(const int32_t* inputs, const int32_t* targets, int B, int T,
                                        const RowSegments* segments)>;

struct SampleLosses {
  std::map<int64_t, double> in_batch;   // each sample's loss in its micro-batch
  std::map<int64_t, double> scrambled;  // the same with every other token of the micro-batch changed
};

// One epoch of `sampler` (world 1, accumulation 1, no shuffle), every sample's loss in its
// micro-batch: the micro-batch's forward with only the sample's targets counting. The segments
// sit in `space` of `device` (pinned on a GPU, as the trainer keeps them). Checks that each row's
// segments start where the sampler placed its samples.
inline SampleLosses losses_in_micro_batches(const SampleSampler& sampler, int vocab, Device& device, MemSpace space,
                                            const ForwardLoss& forward) {
  const int B = sampler.batch();
  const SampleRows& rows = sampler.rows();
  std::vector<int32_t> inputs(size_t(B) * size_t(sampler.seq_len())), targets(inputs.size());
  RowSegments segments(device, space, B, sampler.seq_len());
  SampleLosses out;
  for (int64_t step = 0; step * B < rows.rows(); ++step) {
    const BatchShape shape = sampler.fill_micro_batch(step, 0, inputs.data(), targets.data(), &segments);
    for (int b = 0; b < shape.batch; ++b) {
      const int64_t row = sampler.row_of(step * B + b);
      std::vector<int32_t> starts;
      int at = 0;
      for (int64_t e = rows.row_begin[size_t(row)]; e < rows.row_begin[size_t(row) + 1]; ++e) {
        starts.push_back(at);
        at += rows.length[size_t(e)];
      }
      if (at < shape.seq) starts.push_back(at);  // padding
      REQUIRE(segments.starts(b) == starts);
      for (int64_t e = rows.row_begin[size_t(row)]; e < rows.row_begin[size_t(row) + 1]; ++e) {
        const int64_t k = rows.sample[size_t(e)];
        const size_t begin = size_t(b) * size_t(shape.seq) + size_t(starts[size_t(e - rows.row_begin[size_t(row)])]);
        const size_t end = begin + size_t(rows.length[size_t(e)]);
        std::vector<int32_t> own(size_t(shape.tokens()), kIgnoredTarget),
            other(inputs.begin(), inputs.begin() + shape.tokens());
        for (size_t i = 0; i < own.size(); i++) {
          if (i >= begin && i < end) own[i] = targets[i];
          else other[i] = (other[i] + 7) % vocab;
        }
        if (std::all_of(own.begin(), own.end(), [](int32_t t) { return t == kIgnoredTarget; })) {
          out.in_batch[k] = out.scrambled[k] = NAN;  // placed, with no target that counts
          continue;
        }
        out.in_batch[k] = forward(inputs.data(), own.data(), shape.batch, shape.seq, &segments);
        out.scrambled[k] = forward(other.data(), own.data(), shape.batch, shape.seq, &segments);
      }
    }
  }
  return out;
}

// Every sample of `data` in the micro-batches has the loss it has alone (within rel_tol), and the
// same loss whatever the other tokens of its micro-batch.
inline void require_losses_of_samples_alone(const TokenDataset& data, const SampleLosses& got, int seq_len,
                                            double rel_tol, const ForwardLoss& forward) {
  REQUIRE(int64_t(got.in_batch.size()) == data.samples());  // every sample placed, none skipped
  for (const auto& [k, loss] : got.in_batch) {
    const AloneSample alone = sample_alone(data, k, seq_len);
    INFO("sample " << k << " of " << alone.inputs.size() << " tokens, " << alone.counted << " counted");
    if (alone.counted == 0) {
      CHECK(std::isnan(loss));
      continue;
    }
    const double want = forward(alone.inputs.data(), alone.targets.data(), 1, int(alone.inputs.size()), nullptr);
    INFO("in its micro-batch " << loss << ", alone " << want << ", others changed " << got.scrambled.at(k));
    CHECK(std::abs(loss - want) <= rel_tol * std::abs(want));
    CHECK(got.scrambled.at(k) == loss);
  }
}

}  // namespace zt::test
