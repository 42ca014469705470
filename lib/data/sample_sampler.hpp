#pragma once
// Which samples each rank reads at each step, for record data (docs/data.md, "Samples"): the data
// order of sampler.hpp with rows of whole samples where it has windows.
//
// The samples become R rows once (sample_rows.hpp: one sample a row, or packed). Rows are read as
// one stream over epochs: global row i falls in epoch e = i / R at position j = i % R and is row j
// (shuffle false) or perm_e(j) (shuffle true: a seeded permutation of [0, R) per epoch). A step
// reads B*GA*W consecutive global rows; micro-step m of rank r reads the B from
//   first row of the step + (m*W + r)*B,
// so W ranks with accumulation GA read, together, exactly the rows one process reads with GA*W.
// Epochs count rows, and an epoch's last rows that do not fill a step are not skipped: the next
// epoch's first rows complete it, so every sample is read once per epoch.
//
// Preference pairs (TokenDataset::has_pairs) are read as units of two rows, the chosen and the
// rejected sequence of a pair, never apart: "rows" above are then pairs (B pairs, 2B rows, to a
// micro-batch), each sequence cut to its first seq_len tokens (TRL's max_length, keep_start), and a
// pair whose prompt alone fills seq_len is left out, as TRL drops it. A pair's targets that count are
// its completions' (the loss mask's), and with RowOptions::chosen_prompt_counts (ORPO) every target
// of its chosen row.
//
// A row's samples lie side by side from position 0, each with its RowSegments entry; a sample's
// target after its last token, and the padding after the row's samples, are kIgnoredTarget (and
// padding's inputs 0). With data.padding longest a micro-batch is as long as its longest row, else
// seq_len. A checkpoint keeps the next global row: a resumed run goes on from it at any world size
// or accumulation (the same B keeps the same micro-batches).
#include <cstdint>
#include <string>
#include <vector>

#include "data/data_sampler.hpp"
#include "data/sample_rows.hpp"

namespace zt {

class SampleSampler final : public DataSampler {
public:
  // `data` must have samples (TokenDataset::has_samples); options.packing none or pack.
  SampleSampler(const TokenDataset& data, const RowOptions& options, int batch, int world_size, int rank,
                int grad_accum, bool shuffle, uint64_t seed);

  bool has_samples() const override { return true; }
  int batch() const override { return batch_; }
  int micro_batch_rows() const override { return batch_ * unit_rows_; }
  int seq_len() const override { return options_.seq_len; }
  int64_t epoch_units() const override { return units(); }
  int64_t units_per_step() const override { return rows_per_step(); }
  const char* unit_name() const override { return unit_rows_ == 2 ? "pairs" : "rows"; }
  // The micro-batch's rows times the most targets that count in a row (a preference pair's longest
  // completion; reads every sample's loss mask once).
  int max_counted_targets() const override;
  BatchShape fill_micro_batch(int64_t step, int micro, int32_t* inputs, int32_t* targets,
                              RowSegments* segments) const override;
  StepTokens step_tokens(int64_t step, int window) const override;
  int64_t eval_batches(int64_t requested) const override;
  int64_t eval_rounds(int64_t batches) const override { return (batches + world_size_ - 1) / world_size_; }
  BatchShape fill_eval_batch(int64_t round, int64_t batches, int32_t* inputs, int32_t* targets,
                             RowSegments* segments) const override;
  SamplerState state(int64_t next_step) const override;
  int64_t restore(const SamplerState& state) override;
  std::string describe() const override;

  const SampleRows& rows() const { return rows_; }
  // Rows (pairs for preference data) of an epoch.
  int64_t units() const { return rows_.rows() / unit_rows_; }
  // Preference data: the pairs (their numbers in the file: samples 2i, 2i + 1) of micro-step
  // `micro` of step `step` on this rank, in the order of its rows (pair j: rows 2j and 2j + 1).
  std::vector<int64_t> micro_batch_pairs(int64_t step, int micro) const;
  // The pairs of evaluation round `round` (empty for a stand-in micro-batch).
  std::vector<int64_t> eval_batch_pairs(int64_t round, int64_t batches) const;
  // Of each of `pairs`: the targets of its prompt (its length less one, the first token being no
  // target), which start each of its rows; the completion's targets follow them.
  std::vector<int> prompt_targets(const std::vector<int64_t>& pairs) const;
  int64_t rows_per_step() const { return int64_t(batch_) * grad_accum_ * world_size_; }
  // The unit (row, or pair) global index `global_row` reads (its epoch's permutation applied).
  int64_t row_of(int64_t global_row) const;
  // The global index of the first row of step `step` (from 0).
  int64_t first_row_of_step(int64_t step) const;
  // Of the rows of one epoch in the order the run reads them, micro-batch after micro-batch: the
  // share of the rows' tokens that are the samples' (the rest is padding).
  double epoch_efficiency() const;

private:
  // Rows `rows` (row numbers) into a micro-batch; returns its shape.
  BatchShape fill_rows(const std::vector<int64_t>& rows, int32_t* inputs, int32_t* targets,
                       RowSegments* segments) const;
  // The micro-batch's row length: its longest row, or seq_len.
  int micro_batch_seq(const std::vector<int64_t>& rows) const;
  int64_t counted_in_row(int64_t row) const;
  // Whether every target of `row` counts, whatever the loss mask says (a chosen row with
  // RowOptions::chosen_prompt_counts).
  bool counts_every_target(int64_t row) const;
  // The rows of units [first, first + count) of the read order (global indexes; shuffled or not).
  std::vector<int64_t> rows_of_units(int64_t first, int64_t count) const;
  // The rows of evaluation micro-batch `mb`, in order, never shuffled.
  std::vector<int64_t> eval_rows(int64_t mb) const;
  std::string layout() const;

  const TokenDataset& data_;
  RowOptions options_;
  int batch_, world_size_, rank_, grad_accum_;
  int unit_rows_ = 1;  // 2 for preference pairs
  bool shuffle_;
  uint64_t seed_;
  SampleRows rows_;
  std::vector<int32_t> row_length_;
  std::vector<int64_t> prompt_lengths_;  // preference pairs: each pair's prompt tokens
  int64_t resumed_step_ = 0, resumed_row_ = 0;  // step resumed_step_ starts at global row resumed_row_
};

}  // namespace zt
