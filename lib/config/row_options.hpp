#pragma once
// How the samples of record data fill rows (data/sample_rows.hpp), from the data block.
#include "config/config.hpp"
#include "data/sample_rows.hpp"

namespace zt::config {

inline RowOptions row_options(const DataConfig& d) {
  return {d.packing, d.padding, d.truncation, d.seq_len};
}

}  // namespace zt::config
