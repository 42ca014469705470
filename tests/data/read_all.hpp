#pragma once
// Every token of a dataset, in order.
#include <cstdint>
#include <vector>

#include "data/dataset.hpp"

namespace zt::test {

inline std::vector<int32_t> read_all(const TokenDataset& d) {
  std::vector<int32_t> out(size_t(d.size()));
  d.read(0, d.size(), out.data());
  return out;
}

}  // namespace zt::test
