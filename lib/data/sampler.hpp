#pragma once
// Which tokens each rank reads at each step: the data-order contract of docs/data.md.
//
// The dataset of N tokens is cut into windows of B*T tokens plus the one that follows:
//   window k = tokens [k*B*T, k*B*T + B*T + 1),   k in [0, K),   K = floor((N - 1) / (B*T)).
// (K is the number of windows that fit; the last < B*T tokens of the file are not read. With one
// rank this is llm.c's wrap rule: a batch is read only if all B*T+1 of its tokens exist.)
// Every micro-batch of every rank consumes one window, in the global order
//   g = G_s + micro * W + rank,   G_s = (step * GA) * W  (the first window of step s),
// so that W ranks with accumulation GA read, together, exactly the windows a single process reads
// with accumulation GA*W. Global index g falls in epoch e = g / K at position j = g % K and reads
//   shuffle false: window j             (start token ((step*GA + micro)*W + rank)*B*T, wrapped)
//   shuffle true:  window perm_e(j)     (perm_e: a seeded permutation of [0, K) from (seed, e))
// inputs = the window's first B*T tokens, targets = the same shifted by one ([B, T] row-major).
// A target that does not count (the dataset's loss mask says so: a prompt token, a separator) is
// kIgnoredTarget instead of its token: the loss skips it and is the mean over the targets that
// count (count_targets), as PyTorch's cross-entropy with ignore_index does.
// The position (step, micro) alone determines the batch: a checkpoint saves the seed, the next step
// and the next window G (SamplerState). A run resumed with another number of windows per step (another
// world size or accumulation for the same micro-batch) goes on from window G: G_s = G + (s - step) * GA * W.
//
// Evaluation reads the first n windows in order without shuffling (n: a count for the whole
// world, whatever its size), shared by the ranks: round b of rank r reads window b*W + r, so round
// b of all ranks reads windows [b*W, b*W + W); in the last round some ranks may have none.
// Record data (samples) is read by rows instead: sample_sampler.hpp.
#include <cstdint>
#include <string>
#include <vector>

#include "core/ignored_target.hpp"
#include "data/data_sampler.hpp"
#include "data/dataset.hpp"

namespace zt {

// The number of targets of targets[0, n) that count (are not kIgnoredTarget).
int64_t count_targets(const int32_t* targets, int64_t n);

class BatchSampler final : public DataSampler {
public:
  // Fails (zt::Error naming the dataset) when it holds fewer than B*T+1 tokens.
  BatchSampler(const TokenDataset& data, int batch, int seq_len, int world_size, int rank,
               int grad_accum, bool shuffle, uint64_t seed);

  // Fills inputs and targets ([B*T] each) for optimizer step `step` (from 0), micro-step `micro`;
  // targets the loss mask excludes are kIgnoredTarget.
  void fill(int64_t step, int micro, int32_t* inputs, int32_t* targets) const;
  // The targets that count in optimizer step `step` over all its micro-steps and all ranks (the
  // divisor of the step's mean loss); B*T per window without a loss mask. Every rank computes the
  // same number from the data, without communicating.
  int64_t counted_targets_in_step(int64_t step) const;

  // Evaluation: the windows it covers for `requested` (0: every window; never more than there are),
  // the rounds every rank runs over them, and round `round` of this rank. A rank with no window in
  // the round gets false and every target kIgnoredTarget (its forward pass counts for nothing, and
  // keeps the ranks' collectives in step).
  int64_t eval_windows(int64_t requested) const;
  bool fill_eval(int64_t round, int64_t windows, int32_t* inputs, int32_t* targets) const;

  // DataSampler: the windows as micro-batches of B rows of T tokens, every row one sample.
  bool has_samples() const override { return false; }
  int64_t epoch_units() const override { return num_windows_; }
  int64_t units_per_step() const override { return windows_per_step(); }
  const char* unit_name() const override { return "windows"; }
  BatchShape fill_micro_batch(int64_t step, int micro, int32_t* inputs, int32_t* targets,
                              RowSegments* segments) const override;
  StepTokens step_tokens(int64_t step, int window) const override;
  int64_t eval_batches(int64_t requested) const override { return eval_windows(requested); }
  int64_t eval_rounds(int64_t batches) const override { return (batches + world_size_ - 1) / world_size_; }
  BatchShape fill_eval_batch(int64_t round, int64_t batches, int32_t* inputs, int32_t* targets,
                             RowSegments* segments) const override;
  std::string describe() const override;

  int batch() const override { return batch_; }
  int seq_len() const override { return seq_len_; }
  int64_t window_tokens() const { return window_tokens_; }
  int64_t num_windows() const { return num_windows_; }
  int64_t windows_per_step() const { return int64_t(grad_accum_) * world_size_; }
  // The global index g of (step, micro) for this rank, its epoch, and the window it reads.
  int64_t global_index(int64_t step, int micro) const;
  int64_t epoch_of(int64_t global_index) const { return global_index / num_windows_; }
  int64_t window_of(int64_t global_index) const;
  uint64_t seed() const { return seed_; }

  SamplerState state(int64_t next_step) const override;
  // Adopts the saved seed and position (the saved step starts at the saved window) and returns the
  // step to continue from. A state saved with another window size, other files or shuffle setting
  // cannot continue the same order: that is logged as a warning and the saved position still holds.
  // A state of rows of samples goes on at the same fraction of an epoch, with a warning.
  int64_t restore(const SamplerState& state) override;

private:
  int64_t first_window_of_step(int64_t step) const;
  void read_window(int64_t window, int32_t* inputs, int32_t* targets) const;
  int64_t counted_in_window(int64_t window) const;

  const TokenDataset& data_;
  int batch_, seq_len_, world_size_, rank_, grad_accum_;
  bool shuffle_;
  uint64_t seed_;
  int64_t window_tokens_, num_windows_;
  int64_t resumed_step_ = 0, resumed_window_ = 0;  // step resumed_step_ starts at window resumed_window_
};

}  // namespace zt
