#include "config/batch_size.hpp"

#include <climits>
#include <fmt/format.h>

namespace zt::config {

namespace {

// a * b * c, or nothing when it does not fit in 64 bits.
std::optional<int64_t> product(int64_t a, int64_t b, int64_t c) {
  int64_t ab = 0, abc = 0;
  if (__builtin_mul_overflow(a, b, &ab) || __builtin_mul_overflow(ab, c, &abc)) return std::nullopt;
  return abc;
}

// Where a message about the three batch keys together comes from: the command-line options that set
// any of them (with the config file they override), else the config file.
Diagnostics batch_origin(const Diagnostics& diag) {
  std::string options;
  if (diag.origins)
    for (const char* key : {"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"})
      if (const std::string* o = diag.origins->find(key)) options += (options.empty() ? "" : ", ") + *o;
  if (options.empty()) return diag;
  return Diagnostics(diag.source.empty() ? options : options + " (with " + diag.source + ")");
}

}  // namespace

std::optional<int64_t> batch_product(int64_t micro, int64_t accumulation, int64_t world) {
  return product(micro, accumulation, world);
}

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
    b = {product(*mb, *ga, world).value_or(0), *mb, *ga};
  } else if (tb) {
    b = {*tb, *tb / world, 1};
    if (b.micro_batch_size < 1)
      diag.fail("train_micro_batch_size_per_gpu",
                fmt::format("train_batch_size {} / world {} gives {} (expected >= 1)", *tb, world, b.micro_batch_size));
  } else if (mb) {
    b = {product(*mb, 1, world).value_or(0), *mb, 1};
  } else {
    diag.fail("", "neither train_batch_size nor train_micro_batch_size_per_gpu is given (expected at least one; "
                  "\"auto\" takes the value from the training block)");
  }
  // Derived from a large train_batch_size, they may exceed what the trainer counts in an int.
  if (b.micro_batch_size > INT32_MAX)
    batch_origin(diag).fail("", fmt::format("train_batch_size {} gives a micro-batch of {} (expected at most {})",
                                            b.train_batch_size, b.micro_batch_size, INT32_MAX));
  if (b.accumulation_steps > INT32_MAX)
    batch_origin(diag).fail("", fmt::format("train_batch_size {} gives {} accumulation steps (expected at most {})",
                                            b.train_batch_size, b.accumulation_steps, INT32_MAX));
  const auto global = product(b.micro_batch_size, b.accumulation_steps, world);
  if (!global)
    batch_origin(diag).fail("", fmt::format("micro {} * accumulation {} * world {} does not fit in 64 bits (expected "
                                            "a global batch below 2^63)",
                                            b.micro_batch_size, b.accumulation_steps, world));
  if (b.train_batch_size != *global)
    batch_origin(diag).fail("", fmt::format("train_batch_size {} != micro {} * accumulation {} * world {} (expected "
                              "train_batch_size = train_micro_batch_size_per_gpu * gradient_accumulation_steps * "
                              "world size)",
                              b.train_batch_size, b.micro_batch_size, b.accumulation_steps, world));
  return b;
}

}  // namespace zt::config
