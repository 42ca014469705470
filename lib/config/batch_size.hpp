#pragma once
// DeepSpeed's batch arithmetic (docs/config.md, "Batch size"): derive the missing values of
// train_batch_size = micro * accumulation * world, then require that the equation holds.
#include <cstdint>
#include <optional>

#include "config/diagnostics.hpp"

namespace zt::config {

struct BatchSizes {
  int64_t train_batch_size = 0;
  int64_t micro_batch_size = 0;
  int64_t accumulation_steps = 0;
};

// micro * accumulation * world, or nothing when it does not fit in 64 bits.
std::optional<int64_t> batch_product(int64_t micro, int64_t accumulation, int64_t world);

// Each argument is the value given in the config ("auto" already resolved), or nullopt.
BatchSizes derive_batch_sizes(std::optional<int64_t> train_batch_size, std::optional<int64_t> micro_batch_size,
                              std::optional<int64_t> accumulation_steps, int64_t world_size, const Diagnostics& diag);

}  // namespace zt::config
