#include "config/batch_size.hpp"

#include <fmt/format.h>

namespace zt::config {

BatchSizes derive_batch_sizes(std::optional<int64_t> tb, std::optional<int64_t> mb, std::optional<int64_t> ga,
                              int64_t world, const Diagnostics& diag) {
  BatchSizes b;
  // Floor division, as DeepSpeed does; a quotient of 0 is reported below.
  if (tb && mb && ga) {
    b = {*tb, *mb, *ga};
  } else if (tb && mb) {
    b = {*tb, *mb, *tb / *mb / world};
    if (b.accumulation_steps < 1)
      diag.fail("gradient_accumulation_steps",
                fmt::format("train_batch_size {} / micro {} / world {} gives {} (expected >= 1)", *tb, *mb, world,
                            b.accumulation_steps));
  } else if (tb && ga) {
    b = {*tb, *tb / world / *ga, *ga};
    if (b.micro_batch_size < 1)
      diag.fail("train_micro_batch_size_per_gpu",
                fmt::format("train_batch_size {} / world {} / accumulation {} gives {} (expected >= 1)", *tb, world,
                            *ga, b.micro_batch_size));
  } else if (mb && ga) {
    b = {*mb * *ga * world, *mb, *ga};
  } else if (tb) {
    b = {*tb, *tb / world, 1};
    if (b.micro_batch_size < 1)
      diag.fail("train_micro_batch_size_per_gpu",
                fmt::format("train_batch_size {} / world {} gives {} (expected >= 1)", *tb, world, b.micro_batch_size));
  } else if (mb) {
    b = {*mb * world, *mb, 1};
  } else {
    diag.fail("", "neither train_batch_size nor train_micro_batch_size_per_gpu is given (expected at least one; "
                  "\"auto\" takes the value from the training block)");
  }
  if (b.train_batch_size != b.micro_batch_size * b.accumulation_steps * world)
    diag.fail("", fmt::format("train_batch_size {} != micro {} * accumulation {} * world {} (expected "
                              "train_batch_size = train_micro_batch_size_per_gpu * gradient_accumulation_steps * "
                              "world size)",
                              b.train_batch_size, b.micro_batch_size, b.accumulation_steps, world));
  return b;
}

}  // namespace zt::config
