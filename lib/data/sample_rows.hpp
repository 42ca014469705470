#pragma once
// How the samples of record data fill the rows of micro-batches (docs/data.md, "Samples"):
// `data.packing` none puts one sample in a row, pack puts several whole samples side by side
// (first-fit decreasing: the longest first, each into the first row with room), windows ignores the
// samples and cuts the token stream as plain text is cut. A sample longer than seq_len is cut to
// its first seq_len tokens or left out (`data.truncation`). The rows are made once, from the
// samples' lengths alone: the same files and options give the same rows at any world size.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/name_table.hpp"

namespace zt {

enum class Packing { None, Pack, Windows };
enum class Padding { Longest, MaxLength };
enum class Truncation { Truncate, Drop };

struct RowOptions {
  Packing packing = Packing::None;
  Padding padding = Padding::Longest;  // a micro-batch's rows padded to its longest row, or to seq_len
  Truncation truncation = Truncation::Truncate;
  int seq_len = 0;
  // Preference pairs: the chosen sequence's prompt targets count too, not only its completion's
  // (ORPO's NLL of the whole chosen sequence); the rejected sequence's stay its completion's.
  bool chosen_prompt_counts = false;
};

// The config's names (data.packing, data.padding, data.truncation).
inline constexpr auto kPackingNames =
    name_table<Packing>({{Packing::None, "none"}, {Packing::Pack, "pack"}, {Packing::Windows, "windows"}});
inline constexpr auto kPaddingNames =
    name_table<Padding>({{Padding::Longest, "longest"}, {Padding::MaxLength, "max_length"}});
inline constexpr auto kTruncationNames =
    name_table<Truncation>({{Truncation::Truncate, "truncate"}, {Truncation::Drop, "drop"}});

struct SampleRows {
  // Row r holds entries [row_begin[r], row_begin[r + 1]): sample `sample[e]`'s first `length[e]`
  // tokens each, side by side from position 0.
  std::vector<int64_t> row_begin{0};
  std::vector<int64_t> sample;
  std::vector<int32_t> length;
  int64_t truncated = 0, dropped = 0;  // samples longer than seq_len, cut or left out
  int64_t cut_tokens = 0;              // the tokens they lost (all of a dropped sample's)
  int64_t tokens = 0;                  // the tokens the rows hold

  int64_t rows() const { return int64_t(row_begin.size()) - 1; }
  int32_t row_length(int64_t r) const;
  // Of every row filled to seq_len: the share of sample tokens (the rest is padding).
  double fill(int seq_len) const { return rows() ? double(tokens) / (double(rows()) * seq_len) : 0.0; }
};

// The rows of samples given by their offsets (data/sample_index.hpp) under `options`
// (packing none or pack). Fails (zt::Error naming `source`) when no sample is left.
SampleRows plan_rows(std::span<const int64_t> offsets, const RowOptions& options, const std::string& source);

// The rows of preference pairs (data/sample_index.hpp): rows 2j and 2j + 1 are the chosen and the
// rejected sequence of the j-th pair kept, each cut to its first seq_len tokens (TRL's max_length
// with keep_start); a pair whose prompt (prompt_lengths[i] tokens) alone fills seq_len is left out,
// counted in `dropped` (pairs). options.packing must be none.
SampleRows plan_pair_rows(std::span<const int64_t> offsets, std::span<const int64_t> prompt_lengths,
                          const RowOptions& options, const std::string& source);

// "12 longer than seq_len 512 cut to it (3456 tokens lost)", or "" when no sample is.
std::string describe_truncation(const SampleRows& rows, const RowOptions& options);

}  // namespace zt
