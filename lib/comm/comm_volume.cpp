#include "comm/comm_volume.hpp"

namespace zt {

std::vector<size_t> even_pieces(size_t count, int world_size) {
  std::vector<size_t> pieces(size_t(world_size), count / size_t(world_size));
  for (size_t p = 0; p < count % size_t(world_size); ++p) pieces[p] += 1;
  return pieces;
}

std::vector<size_t> piece_offsets(std::span<const size_t> counts) {
  std::vector<size_t> offsets(counts.size());
  size_t at = 0;
  for (size_t p = 0; p < counts.size(); ++p) {
    offsets[p] = at;
    at += counts[p];
  }
  return offsets;
}

size_t total_count(std::span<const size_t> counts) {
  size_t total = 0;
  for (size_t c : counts) total += c;
  return total;
}

uint64_t reduce_scatter_bytes_sent(std::span<const size_t> counts, int rank, DType dtype) {
  if (counts.size() <= 1) return 0;
  return uint64_t(total_count(counts) - counts[size_t(rank)]) * dtype_size(dtype);
}

uint64_t all_gather_bytes_sent(std::span<const size_t> counts, int rank, DType dtype) {
  if (counts.size() <= 1) return 0;
  return uint64_t(counts[size_t(rank)]) * (counts.size() - 1) * dtype_size(dtype);
}

uint64_t all_reduce_bytes_sent(size_t count, int rank, int world_size, DType dtype) {
  auto pieces = even_pieces(count, world_size);
  return reduce_scatter_bytes_sent(pieces, rank, dtype) +
         all_gather_bytes_sent(pieces, rank, dtype);
}

}  // namespace zt
