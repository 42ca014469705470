#include "comm/op_signature.hpp"

#include <fmt/format.h>

namespace zt {

uint64_t hash_piece_counts(std::span<const size_t> counts) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the 64-bit counts
  for (size_t c : counts) {
    for (int b = 0; b < 8; ++b) {
      h ^= (uint64_t(c) >> (8 * b)) & 0xffu;
      h *= 1099511628211ull;
    }
  }
  return h;
}

std::string describe(const OpSignature& sig) {
  std::string s = fmt::format("{} #{}", comm_op_name(sig.op), sig.seq);
  switch (sig.op) {
    case CommOp::Barrier: return s;
    case CommOp::AllToAll: return fmt::format("{} ({})", s, dtype_name(sig.dtype));
    case CommOp::Broadcast:
      return fmt::format("{} ({} {} from rank {})", s, sig.count, dtype_name(sig.dtype), sig.root);
    case CommOp::AllReduce:
    case CommOp::ReduceScatter:
      return fmt::format("{} ({} {}, {})", s, sig.count, dtype_name(sig.dtype),
                         sig.reduce == ReduceOp::Sum ? "sum" : "max");
    default: return fmt::format("{} ({} {})", s, sig.count, dtype_name(sig.dtype));
  }
}

std::optional<std::string> find_signature_mismatch(std::span<const OpSignature> all) {
  for (size_t r = 1; r < all.size(); ++r) {
    if (all[r] == all[0]) continue;
    std::string mine = describe(all[r]), theirs = describe(all[0]);
    // Same op, sizes and type but different cuts: say so, the descriptions alone look equal.
    if (mine == theirs) mine += " with different piece counts";
    return fmt::format("rank {} issued {} while rank 0 issued {}", r, mine, theirs);
  }
  return std::nullopt;
}

std::string timeout_message(int rank, const OpSignature& sig, int64_t step,
                            double timeout_seconds) {
  return fmt::format(
      "collective timed out: rank {} {} at step {} did not complete within {} s "
      "(training.comm_timeout); aborting the job",
      rank, describe(sig), step, timeout_seconds);
}

std::string mismatch_message(int64_t step, const std::string& mismatch) {
  return fmt::format("collective mismatch at step {}: {}; aborting the job", step, mismatch);
}

}  // namespace zt
