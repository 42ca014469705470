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

uint64_t all_to_all_bytes_sent(std::span<const size_t> send_counts, int rank, DType dtype) {
  return uint64_t(total_count(send_counts) - send_counts[size_t(rank)]) * dtype_size(dtype);
}

uint64_t expert_all_to_all_bytes(size_t rows_out, size_t rows_in, int experts, int group, int d_model, DType dtype,
                                 bool recomputed) {
  if (group <= 1) return 0;
  const uint64_t forwards = recomputed ? 2 : 1;
  const uint64_t counts = uint64_t(group - 1) * uint64_t(experts / group) * dtype_size(DType::F32);
  const uint64_t rows = uint64_t(rows_out + rows_in) * uint64_t(d_model) * dtype_size(dtype);
  return forwards * (counts + rows) + rows;
}

}  // namespace zt
