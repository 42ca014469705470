#pragma once
// Flat elements [begin, end) of the parameter buffer: a rank's shard, the range its optimizer
// updates, a bucket, a piece of a checkpoint file.
#include <algorithm>
#include <cstddef>

namespace zt {

struct Range {
  size_t begin = 0, end = 0;
  size_t size() const { return end > begin ? end - begin : 0; }
  bool empty() const { return end <= begin; }
  Range intersect(Range o) const {
    return {std::max(begin, o.begin), std::max(std::max(begin, o.begin), std::min(end, o.end))};
  }
  bool operator==(const Range&) const = default;
};

}  // namespace zt
