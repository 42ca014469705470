#pragma once
// The samples in each row of a micro-batch (docs/architecture.md, "Packed rows"): a row holds one
// sample, or several whole samples side by side, and a token sees only its own sample's tokens
// while positions restart at 0 with each. The caller says where each row's samples start, as
// flash-attention's cu_seqlens within the row; RowSegments keeps the table the kernels read, the
// bounds of every token's sample (core/token_segment.hpp), for the model to copy to the device.
// Padding at a row's end is a sample of its own whose targets are kIgnoredTarget.
// Like the tokens, the table lives in memory the device reads (pinned on a GPU): the model's copy is
// queued, not waited for, and a CUDA graph replays it from the same address, so the table must not
// change until the step's end, and the trainer keeps one per micro-batch.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/buffer.hpp"
#include "core/token_segment.hpp"

namespace zt {

class RowSegments {
public:
  RowSegments() = default;
  // Room for max_batch rows of max_seq tokens in `space` (Host on the CPU, Pinned on a GPU),
  // counted as activations; shaped (max_batch, max_seq), every row one sample.
  RowSegments(Device& device, MemSpace space, int max_batch, int max_seq);
  // The bytes the constructor allocates (the memory plan's share of the caller).
  static size_t bytes(int max_batch, int max_seq);

  // Shapes the table for a micro-batch of B rows of T tokens (within the room), every row one
  // sample.
  void reset(int B, int T);
  // Row b holds samples starting at starts[0] = 0 < starts[1] < ... < starts[n - 1] < T; the last
  // runs to T. With padding, the last segment is the row's padding (starts[n - 1] > 0): the tokens
  // a Hugging Face attention mask leaves out. Throws zt::Error naming the row and the offset that
  // breaks this.
  void set_row(int b, std::span<const int32_t> starts, bool padding = false);
  // Where row b's samples start (set_row's argument, read back from the table).
  std::vector<int32_t> starts(int b) const;
  // Where row b's padding begins (seq() for a row without padding).
  int padding_from(int b) const { return padding_from_[size_t(b)]; }
  // [batch()] of them, in the table's memory space (what the device copies).
  const int32_t* padding_table() const { return padding_from_.data(); }

  int batch() const { return B_; }
  int seq() const { return T_; }
  // [batch(), seq()] row-major, in the memory space given.
  const TokenSegment* table() const { return table_.data(); }

private:
  Buffer<TokenSegment> table_;
  Buffer<int32_t> padding_from_;
  int max_batch_ = 0, max_seq_ = 0, B_ = 0, T_ = 0;
};

}  // namespace zt
