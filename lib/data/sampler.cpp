#include "data/sampler.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.hpp"
#include "data/index_permutation.hpp"

namespace zt {

BatchSampler::BatchSampler(const TokenDataset& data, int batch, int seq_len, int world_size, int rank,
                           int grad_accum, bool shuffle, uint64_t seed)
    : data_(data), batch_(batch), seq_len_(seq_len), world_size_(world_size), rank_(rank),
      grad_accum_(grad_accum), shuffle_(shuffle), seed_(seed) {
  if (batch < 1 || seq_len < 1) fail("data sampler: batch {} and seq_len {} must be positive", batch, seq_len);
  if (world_size < 1 || rank < 0 || rank >= world_size)
    fail("data sampler: rank {} outside world size {}", rank, world_size);
  if (grad_accum < 1) fail("data sampler: gradient accumulation {} must be positive", grad_accum);
  window_tokens_ = int64_t(batch) * seq_len;
  const int64_t n = data.size();
  if (n < window_tokens_ + 1)
    fail("{}: too few tokens for one batch: B*T+1 = {}*{}+1 = {} needed, {} present", data.path(), batch,
         seq_len, window_tokens_ + 1, n);
  num_windows_ = (n - 1) / window_tokens_;
}

int64_t BatchSampler::global_index(int64_t step, int micro) const {
  if (step < 0 || micro < 0 || micro >= grad_accum_)
    fail("data sampler: step {} / micro-step {} out of range (accumulation {})", step, micro, grad_accum_);
  return first_window_of_step(step) + int64_t(micro) * world_size_ + rank_;
}

int64_t BatchSampler::first_window_of_step(int64_t step) const {
  if (step < resumed_step_)
    fail("data sampler: step {} comes before step {}, where the run resumed", step + 1, resumed_step_ + 1);
  return resumed_window_ + (step - resumed_step_) * windows_per_step();
}

int64_t BatchSampler::window_of(int64_t global_index) const {
  const int64_t position = global_index % num_windows_;
  if (!shuffle_) return position;
  // Epoch e's permutation is keyed by (seed, e) only, so any rank can evaluate any index.
  const uint64_t epoch = uint64_t(global_index / num_windows_);
  IndexPermutation permutation(uint64_t(num_windows_), seed_ * 0x9E3779B97F4A7C15ull ^ (epoch + 1));
  return int64_t(permutation(uint64_t(position)));
}

int64_t count_targets(const int32_t* targets, int64_t n) {
  int64_t counted = 0;
  for (int64_t i = 0; i < n; ++i) counted += targets[i] != kIgnoredTarget;
  return counted;
}

void BatchSampler::read_window(int64_t window, int32_t* inputs, int32_t* targets) const {
  const int64_t start = window * window_tokens_;
  data_.read(start, window_tokens_, inputs);
  data_.read(start + 1, window_tokens_, targets);
  if (!data_.has_loss_mask()) return;
  std::vector<uint8_t> counts(static_cast<size_t>(window_tokens_));
  data_.read_loss_mask(start + 1, window_tokens_, counts.data());
  for (int64_t i = 0; i < window_tokens_; ++i)
    if (!counts[size_t(i)]) targets[i] = kIgnoredTarget;
}

int64_t BatchSampler::counted_in_window(int64_t window) const {
  if (!data_.has_loss_mask()) return window_tokens_;
  std::vector<uint8_t> counts(static_cast<size_t>(window_tokens_));
  data_.read_loss_mask(window * window_tokens_ + 1, window_tokens_, counts.data());
  return std::count(counts.begin(), counts.end(), uint8_t(1));
}

int64_t BatchSampler::counted_targets_in_step(int64_t step) const {
  if (step < 0) fail("data sampler: step {} is negative", step);
  int64_t counted = 0;
  const int64_t first = first_window_of_step(step);
  for (int64_t g = first; g < first + windows_per_step(); ++g) counted += counted_in_window(window_of(g));
  return counted;
}

void BatchSampler::fill(int64_t step, int micro, int32_t* inputs, int32_t* targets) const {
  read_window(window_of(global_index(step, micro)), inputs, targets);
}

int64_t BatchSampler::eval_windows(int64_t requested) const {
  if (requested < 0) fail("data sampler: {} eval windows requested", requested);
  return requested == 0 ? num_windows_ : std::min(requested, num_windows_);
}

bool BatchSampler::fill_eval(int64_t round, int64_t windows, int32_t* inputs, int32_t* targets) const {
  if (round < 0 || round >= eval_rounds(windows))
    fail("data sampler: eval round {} outside the {} rounds of {} windows", round, eval_rounds(windows), windows);
  const int64_t window = round * world_size_ + rank_;
  if (window < windows) {
    read_window(window, inputs, targets);
    return true;
  }
  read_window(0, inputs, targets);  // a forward pass in step with the other ranks', counting nothing
  std::fill(targets, targets + window_tokens_, kIgnoredTarget);
  return false;
}

BatchShape BatchSampler::fill_micro_batch(int64_t step, int micro, int32_t* inputs, int32_t* targets,
                                          RowSegments*) const {
  fill(step, micro, inputs, targets);
  return {batch_, seq_len_};
}

StepTokens BatchSampler::step_tokens(int64_t step, int window) const {
  const int64_t tokens = windows_per_step() * window_tokens_;
  const int64_t keys = window > 0 ? std::min<int64_t>(seq_len_, window) : seq_len_;
  return {counted_targets_in_step(step), tokens, tokens, tokens * seq_len_, tokens * keys};
}

BatchShape BatchSampler::fill_eval_batch(int64_t round, int64_t batches, int32_t* inputs, int32_t* targets,
                                         RowSegments*) const {
  const bool has = fill_eval(round, batches, inputs, targets);
  return {batch_, seq_len_, !has};
}

std::string BatchSampler::describe() const {
  return fmt::format("{} windows of {} x {} + 1 tokens", num_windows_, batch_, seq_len_);
}

SamplerState BatchSampler::state(int64_t next_step) const {
  SamplerState s = sampler_state(seed_, shuffle_, next_step, data_.files());
  s.window_tokens = window_tokens_;
  s.num_windows = num_windows_;
  s.windows_per_step = windows_per_step();
  s.next_window = first_window_of_step(next_step);
  return s;
}

int64_t BatchSampler::restore(const SamplerState& state) {
  seed_ = state.seed;
  resumed_step_ = state.next_step;
  if (state.unit != "windows") {
    resumed_window_ = std::llround(state.epochs() * double(num_windows_));
    spdlog::warn("the checkpoint read rows of samples ({}), this run reads windows of {} tokens: training continues "
                 "at window {}, as far into the data ({:.3g} epochs)",
                 state.layout, window_tokens_, resumed_window_, state.epochs());
    return state.next_step;
  }
  resumed_window_ = state.next_window;
  warn_if_files_changed(state, data_.files(), fmt::format("window {}", state.next_window));
  warn_if_order_changed(state, shuffle_, state.window_tokens != window_tokens_ || state.num_windows != num_windows_,
                        fmt::format("window {} -> {} tokens, {} -> {} windows", state.window_tokens, window_tokens_,
                                    state.num_windows, num_windows_));
  return state.next_step;
}

}  // namespace zt
