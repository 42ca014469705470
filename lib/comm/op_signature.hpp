#pragma once
// What a rank says it is issuing as its n-th collective. With the sequence check on, ranks
// exchange these before every collective; any difference is a programming error (a rank skipped
// or reordered a collective) that would otherwise hang or silently mix up buffers.
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "comm/communicator.hpp"
#include "core/dtype.hpp"

namespace zt {

// Trivially copyable: exchanged as raw bytes between ranks of the same binary.
struct OpSignature {
  uint64_t seq = 0;          // 1 for the first collective of a communicator
  uint64_t count = 0;        // total elements (all pieces)
  uint64_t pieces_hash = 0;  // hash of the per-rank piece counts (0 when not cut into pieces)
  int32_t root = -1;         // broadcast root
  CommOp op = CommOp::Barrier;
  DType dtype = DType::F32;
  ReduceOp reduce = ReduceOp::Sum;
  uint8_t reserved = 0;

  bool operator==(const OpSignature&) const = default;
};

uint64_t hash_piece_counts(std::span<const size_t> counts);

// "all_gather #7 (1000 bf16)", "all_reduce #3 (12 fp32, max)", "broadcast #2 (5 fp32 from rank 1)".
std::string describe(const OpSignature& sig);

// Compares every rank's signature with rank 0's. Returns a message naming the first rank that
// differs and both ops ("rank 1 issued all_gather #7 (...) while rank 0 issued reduce_scatter #7
// (...)"), or nothing when all agree. all[r] is rank r's signature.
std::optional<std::string> find_signature_mismatch(std::span<const OpSignature> all);

// The lines logged before the job is aborted, shared by the backends.
std::string timeout_message(int rank, const OpSignature& sig, int64_t step, double timeout_seconds);
std::string mismatch_message(int64_t step, const std::string& mismatch);

}  // namespace zt
