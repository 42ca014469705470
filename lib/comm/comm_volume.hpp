#pragma once
// How collectives are cut into per-rank pieces, and how many bytes a rank puts on the wire for
// each op. Both backends count with these, so volume logs mean the same thing everywhere:
// reduce_scatter sends every piece but one's own (total - own), all_gather sends its own piece
// to every other rank (own x (N-1)), all_reduce is the two of them over an even split, broadcast
// forwards the buffer to each binomial-tree child, barrier carries no payload. These are the
// algorithm's volumes (ZeRO's kΨ(N-1)/N); NCCL moves exactly these for even pieces, while for
// uneven pieces its fallback (one ring broadcast or reduce per piece) forwards more than counted.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/dtype.hpp"

namespace zt {

// count split into world_size pieces as evenly as possible; the first count % N pieces get one
// more.
std::vector<size_t> even_pieces(size_t count, int world_size);
// Exclusive prefix sums: where each piece starts (one entry per piece).
std::vector<size_t> piece_offsets(std::span<const size_t> counts);
size_t total_count(std::span<const size_t> counts);
// The address `elements` elements of type t past base: where a piece starts in a buffer.
inline const unsigned char* bytes_at(const void* base, size_t elements, DType t) {
  return static_cast<const unsigned char*>(base) + elements * dtype_size(t);
}
inline unsigned char* bytes_at(void* base, size_t elements, DType t) {
  return static_cast<unsigned char*>(base) + elements * dtype_size(t);
}

uint64_t reduce_scatter_bytes_sent(std::span<const size_t> counts, int rank, DType dtype);
uint64_t all_gather_bytes_sent(std::span<const size_t> counts, int rank, DType dtype);
uint64_t all_reduce_bytes_sent(size_t count, int rank, int world_size, DType dtype);
// all_to_all sends every piece but its own.
uint64_t all_to_all_bytes_sent(std::span<const size_t> send_counts, int rank, DType dtype);

// Expert parallelism's all-to-all traffic of one rank for one sparse layer and micro-batch
// (model/moe_block.cpp): the token counts for each other rank of its group of G (E/G fp32 each);
// rows_out rows of d_model elements to other ranks' experts and rows_in rows of theirs back, in
// forward and again (as gradients) in backward; with recomputed blocks, forward twice.
uint64_t expert_all_to_all_bytes(size_t rows_out, size_t rows_in, int experts, int group, int d_model, DType dtype,
                                 bool recomputed);

}  // namespace zt
