#include "data/sample_sampler.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/ignored_target.hpp"
#include "data/index_permutation.hpp"

namespace zt {

namespace {

// The prompt of each pair: the tokens of its chosen sample before the first that the mask counts.
std::vector<int64_t> prompt_lengths(const TokenDataset& data) {
  const auto offsets = data.sample_offsets();
  std::vector<int64_t> lengths(size_t(data.samples() / 2));
  std::vector<uint8_t> mask;
  for (size_t i = 0; i < lengths.size(); ++i) {
    const int64_t first = offsets[2 * i], n = offsets[2 * i + 1] - first;
    mask.resize(size_t(n));
    data.read_loss_mask(first, n, mask.data());
    lengths[i] = std::find(mask.begin(), mask.end(), uint8_t(1)) - mask.begin();
  }
  return lengths;
}

}  // namespace

SampleSampler::SampleSampler(const TokenDataset& data, const RowOptions& options, int batch, int world_size, int rank,
                             int grad_accum, bool shuffle, uint64_t seed)
    : data_(data), options_(options), batch_(batch), world_size_(world_size), rank_(rank), grad_accum_(grad_accum),
      shuffle_(shuffle), seed_(seed) {
  if (!data.has_samples()) fail("{}: no sample index: its tokens are read as windows", data.path());
  if (batch < 1 || options.seq_len < 1)
    fail("data sampler: batch {} and seq_len {} must be positive", batch, options.seq_len);
  if (world_size < 1 || rank < 0 || rank >= world_size)
    fail("data sampler: rank {} outside world size {}", rank, world_size);
  if (grad_accum < 1) fail("data sampler: gradient accumulation {} must be positive", grad_accum);
  if (data.has_pairs()) {
    unit_rows_ = 2;
    prompt_lengths_ = prompt_lengths(data);
    rows_ = plan_pair_rows(data.sample_offsets(), prompt_lengths_, options, data.path());
  } else {
    rows_ = plan_rows(data.sample_offsets(), options, data.path());
  }
  row_length_.resize(size_t(rows_.rows()));
  for (int64_t r = 0; r < rows_.rows(); ++r) row_length_[size_t(r)] = rows_.row_length(r);
}

int64_t SampleSampler::row_of(int64_t global_row) const {
  const int64_t R = units(), position = global_row % R;
  if (!shuffle_) return position;
  // Epoch e's permutation is keyed by (seed, e) only, so any rank can evaluate any row.
  const uint64_t epoch = uint64_t(global_row / R);
  IndexPermutation permutation(uint64_t(R), seed_ * 0x9E3779B97F4A7C15ull ^ (epoch + 1));
  return int64_t(permutation(uint64_t(position)));
}

int64_t SampleSampler::first_row_of_step(int64_t step) const {
  if (step < resumed_step_)
    fail("data sampler: step {} comes before step {}, where the run resumed", step + 1, resumed_step_ + 1);
  return resumed_row_ + (step - resumed_step_) * rows_per_step();
}

int SampleSampler::micro_batch_seq(const std::vector<int64_t>& rows) const {
  if (options_.padding == Padding::MaxLength) return options_.seq_len;
  int longest = 1;
  for (int64_t r : rows) longest = std::max(longest, int(row_length_[size_t(r)]));
  return longest;
}

BatchShape SampleSampler::fill_rows(const std::vector<int64_t>& rows, int32_t* inputs, int32_t* targets,
                                    RowSegments* segments) const {
  if (!segments) fail("{}: rows of samples need their segments", data_.path());
  const BatchShape shape{int(rows.size()), micro_batch_seq(rows)};
  const int T = shape.seq;
  segments->reset(shape.batch, T);
  const auto offsets = data_.sample_offsets();
  std::vector<uint8_t> counts;
  std::vector<int32_t> starts;
  for (int b = 0; b < shape.batch; ++b) {
    int32_t* in = inputs + size_t(b) * size_t(T);
    int32_t* tg = targets + size_t(b) * size_t(T);
    starts.clear();
    int at = 0;
    const int64_t row = rows[size_t(b)];
    for (int64_t e = rows_.row_begin[size_t(row)]; e < rows_.row_begin[size_t(row) + 1]; ++e) {
      const int64_t first = offsets[size_t(rows_.sample[size_t(e)])];
      const int n = rows_.length[size_t(e)];
      starts.push_back(at);
      data_.read(first, n, in + at);
      if (n > 1) data_.read(first + 1, n - 1, tg + at);
      tg[at + n - 1] = kIgnoredTarget;  // the next token is another sample's, or cut off
      if (data_.has_loss_mask() && n > 1 && !counts_every_target(row)) {
        counts.resize(size_t(n - 1));
        data_.read_loss_mask(first + 1, n - 1, counts.data());
        for (int i = 0; i < n - 1; ++i)
          if (!counts[size_t(i)]) tg[at + i] = kIgnoredTarget;
      }
      at += n;
    }
    if (at < T) {  // padding: a segment of its own that counts nothing
      starts.push_back(at);
      std::fill(in + at, in + T, 0);
      std::fill(tg + at, tg + T, kIgnoredTarget);
    }
    segments->set_row(b, starts, /*padding=*/at < T);
  }
  return shape;
}

BatchShape SampleSampler::fill_micro_batch(int64_t step, int micro, int32_t* inputs, int32_t* targets,
                                           RowSegments* segments) const {
  if (step < 0 || micro < 0 || micro >= grad_accum_)
    fail("data sampler: step {} / micro-step {} out of range (accumulation {})", step, micro, grad_accum_);
  const int64_t first = first_row_of_step(step) + (int64_t(micro) * world_size_ + rank_) * batch_;
  return fill_rows(rows_of_units(first, batch_), inputs, targets, segments);
}

std::vector<int64_t> SampleSampler::rows_of_units(int64_t first, int64_t count) const {
  std::vector<int64_t> rows;
  for (int64_t u = first; u < first + count; ++u)
    for (int k = 0; k < unit_rows_; ++k) rows.push_back(row_of(u) * unit_rows_ + k);
  return rows;
}

std::vector<int64_t> SampleSampler::micro_batch_pairs(int64_t step, int micro) const {
  const int64_t first = first_row_of_step(step) + (int64_t(micro) * world_size_ + rank_) * batch_;
  std::vector<int64_t> pairs;
  for (int64_t u = first; u < first + batch_; ++u)
    pairs.push_back(rows_.sample[size_t(rows_.row_begin[size_t(row_of(u) * unit_rows_)])] / 2);
  return pairs;
}

bool SampleSampler::counts_every_target(int64_t row) const {
  return options_.chosen_prompt_counts && unit_rows_ == 2 && row % 2 == 0;
}

std::vector<int> SampleSampler::prompt_targets(const std::vector<int64_t>& pairs) const {
  std::vector<int> out;
  for (int64_t pair : pairs) out.push_back(int(std::max<int64_t>(0, prompt_lengths_.at(size_t(pair)) - 1)));
  return out;
}

int64_t SampleSampler::counted_in_row(int64_t row) const {
  const auto offsets = data_.sample_offsets();
  int64_t counted = 0;
  std::vector<uint8_t> counts;
  for (int64_t e = rows_.row_begin[size_t(row)]; e < rows_.row_begin[size_t(row) + 1]; ++e) {
    const int n = rows_.length[size_t(e)];
    if (n <= 1) continue;
    if (!data_.has_loss_mask() || counts_every_target(row)) {
      counted += n - 1;
      continue;
    }
    counts.resize(size_t(n - 1));
    data_.read_loss_mask(offsets[size_t(rows_.sample[size_t(e)])] + 1, n - 1, counts.data());
    counted += std::count(counts.begin(), counts.end(), uint8_t(1));
  }
  return counted;
}

int SampleSampler::max_counted_targets() const {
  int64_t most = 0;
  for (int64_t r = 0; r < rows_.rows() && most < seq_len(); ++r) most = std::max(most, counted_in_row(r));
  return int(int64_t(micro_batch_rows()) * std::min<int64_t>(most, seq_len()));
}

StepTokens SampleSampler::step_tokens(int64_t step, int window) const {
  if (step < 0) fail("data sampler: step {} is negative", step);
  StepTokens t;
  const int64_t first = first_row_of_step(step);
  for (int64_t mb = 0; mb < int64_t(grad_accum_) * world_size_; ++mb) {
    const std::vector<int64_t> rows = rows_of_units(first + mb * batch_, batch_);
    t.row_tokens += int64_t(rows.size()) * micro_batch_seq(rows);
    for (int64_t row : rows) {
      const int64_t counted = counted_in_row(row);
      t.counted += counted;
      if (unit_rows_ == 2 && row % 2 == 0) t.chosen += counted;
      for (int64_t e = rows_.row_begin[size_t(row)]; e < rows_.row_begin[size_t(row) + 1]; ++e) {
        const int64_t n = rows_.length[size_t(e)];
        t.tokens += n;
        t.attended += n * n;
        t.attended_in_window += n * (window > 0 ? std::min<int64_t>(n, window) : n);
      }
    }
  }
  return t;
}

int64_t SampleSampler::eval_batches(int64_t requested) const {
  if (requested < 0) fail("data sampler: {} eval batches requested", requested);
  const int64_t all = (units() + batch_ - 1) / batch_;
  return requested == 0 ? all : std::min(requested, all);
}

BatchShape SampleSampler::fill_eval_batch(int64_t round, int64_t batches, int32_t* inputs, int32_t* targets,
                                          RowSegments* segments) const {
  if (round < 0 || round >= eval_rounds(batches))
    fail("data sampler: eval round {} outside the {} rounds of {} micro-batches", round, eval_rounds(batches),
         batches);
  const int64_t mb = round * world_size_ + rank_;
  BatchShape shape = fill_rows(eval_rows(mb < batches ? mb : 0), inputs, targets, segments);
  if (mb >= batches) {  // a forward pass in step with the other ranks', counting nothing
    std::fill(targets, targets + shape.tokens(), kIgnoredTarget);
    shape.stand_in = true;
  }
  return shape;
}

std::vector<int64_t> SampleSampler::eval_rows(int64_t mb) const {
  std::vector<int64_t> rows;
  for (int64_t u = mb * batch_; u < std::min(units(), (mb + 1) * batch_); ++u)
    for (int k = 0; k < unit_rows_; ++k) rows.push_back(u * unit_rows_ + k);
  return rows;
}

std::vector<int64_t> SampleSampler::eval_batch_pairs(int64_t round, int64_t batches) const {
  const int64_t mb = round * world_size_ + rank_;
  std::vector<int64_t> pairs;
  if (mb >= batches || unit_rows_ != 2) return pairs;
  const std::vector<int64_t> rows = eval_rows(mb);
  for (size_t j = 0; j < rows.size(); j += 2)
    pairs.push_back(rows_.sample[size_t(rows_.row_begin[size_t(rows[j])])] / 2);
  return pairs;
}

std::string SampleSampler::layout() const {
  return fmt::format("{}packing {}, padding {}, truncation {}, seq_len {}, batch {}", unit_rows_ == 2 ? "pairs, " : "",
                     kPackingNames.name(options_.packing), kPaddingNames.name(options_.padding),
                     kTruncationNames.name(options_.truncation), options_.seq_len, batch_);
}

SamplerState SampleSampler::state(int64_t next_step) const {
  SamplerState s = sampler_state(seed_, shuffle_, next_step, data_.files());
  s.unit = "rows";
  s.num_rows = units();
  s.rows_per_step = rows_per_step();
  s.next_row = first_row_of_step(next_step);
  s.layout = layout();
  return s;
}

int64_t SampleSampler::restore(const SamplerState& state) {
  seed_ = state.seed;
  resumed_step_ = state.next_step;
  if (state.unit != "rows") {
    resumed_row_ = std::llround(state.epochs() * double(units()));
    spdlog::warn("the checkpoint read windows of {} tokens, this run reads rows of samples: training continues at "
                 "row {}, as far into the data ({:.3g} epochs)",
                 state.window_tokens, resumed_row_, state.epochs());
    return state.next_step;
  }
  resumed_row_ = state.next_row;
  warn_if_files_changed(state, data_.files(), fmt::format("row {}", state.next_row));
  warn_if_order_changed(state, shuffle_, state.layout != layout() || state.num_rows != units(),
                        fmt::format("{} -> {}, {} -> {} rows", state.layout, layout(), state.num_rows, units()));
  return state.next_step;
}

double SampleSampler::epoch_efficiency() const {
  int64_t row_tokens = 0;
  for (int64_t first = 0; first < units(); first += batch_) {
    const std::vector<int64_t> rows = rows_of_units(first, std::min<int64_t>(batch_, units() - first));
    row_tokens += int64_t(rows.size()) * micro_batch_seq(rows);
  }
  return double(rows_.tokens) / double(row_tokens);
}

std::string SampleSampler::describe() const {
  const std::string cut = describe_truncation(rows_, options_);
  if (unit_rows_ == 2) {
    const double efficiency = epoch_efficiency();
    return fmt::format("{} preference pairs{}{}, chosen and rejected one to a row, {} pairs to a micro-batch, padded "
                       "to {}: packing efficiency {:.1f}% ({:.1f}% padding)",
                       data_.samples() / 2, rows_.dropped ? fmt::format(", {} left out (the prompt fills seq_len {})",
                                                                        rows_.dropped, options_.seq_len)
                                                          : "",
                       rows_.truncated ? fmt::format(", {} sequences cut to seq_len {}", rows_.truncated,
                                                     options_.seq_len)
                                       : "",
                       batch_, options_.padding == Padding::Longest ? "the longest row" : "seq_len",
                       100 * efficiency, 100 * (1 - efficiency));
  }
  const std::string rows = options_.packing == Packing::Pack
                               ? fmt::format("packed into {} rows of up to {} tokens", rows_.rows(), options_.seq_len)
                               : fmt::format("one per row ({} rows)", rows_.rows());
  const std::string padding = options_.padding == Padding::Longest
                                  ? fmt::format("padded to the longest row of each micro-batch of {}", batch_)
                                  : fmt::format("padded to {} tokens", options_.seq_len);
  const double efficiency = epoch_efficiency();
  return fmt::format("{} samples{}, {}, {}: packing efficiency {:.1f}% ({:.1f}% padding)", data_.samples(),
                     cut.empty() ? "" : ", " + cut, rows, padding, 100 * efficiency, 100 * (1 - efficiency));
}

}  // namespace zt
