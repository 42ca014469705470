// Batch arithmetic: each derivation row of docs/config.md ("Batch size"), then the equation with its exact error.
#include "config/batch_size.hpp"
#include "config_test_support.hpp"

using namespace zt::config;
using namespace zt::config::testing;

namespace {

struct Batch {
  int64_t tb, mb, ga;
};

Batch resolved(const json& raw, int w) {
  auto c = resolve(raw, world(w));
  return {c.train_batch_size, c.train_micro_batch_size_per_gpu, c.gradient_accumulation_steps};
}

}  // namespace

TEST_CASE("TB and MB give GA = TB / MB / W") {
  auto b = resolved({{"train_batch_size", 32}, {"train_micro_batch_size_per_gpu", 4}}, 2);
  CHECK(b.ga == 4);
  CHECK(b.tb == 32);
  CHECK(b.mb == 4);
}

TEST_CASE("TB and GA give MB = TB / W / GA") {
  auto b = resolved({{"train_batch_size", 32}, {"gradient_accumulation_steps", 2}}, 4);
  CHECK(b.mb == 4);
  CHECK(b.ga == 2);
}

TEST_CASE("MB and GA give TB = MB * GA * W") {
  auto b = resolved({{"train_micro_batch_size_per_gpu", 3}, {"gradient_accumulation_steps", 5}}, 7);
  CHECK(b.tb == 105);
}

TEST_CASE("TB alone gives GA = 1 and MB = TB / W") {
  auto b = resolved({{"train_batch_size", 16}}, 4);
  CHECK(b.ga == 1);
  CHECK(b.mb == 4);
}

TEST_CASE("MB alone gives GA = 1 and TB = MB * W") {
  auto b = resolved({{"train_micro_batch_size_per_gpu", 5}}, 3);
  CHECK(b.ga == 1);
  CHECK(b.tb == 15);
}

TEST_CASE("neither TB nor MB is an error") {
  CHECK(error_of(json::object()).rfind("test.json: neither train_batch_size nor train_micro_batch_size_per_gpu is "
                                       "given",
                                       0) == 0);
  CHECK(error_of({{"gradient_accumulation_steps", 4}}).find("neither train_batch_size nor") != std::string::npos);
}

TEST_CASE("TB = MB * GA * W must hold; the error shows all four numbers") {
  CHECK(error_of({{"train_batch_size", 32}, {"train_micro_batch_size_per_gpu", 3}, {"gradient_accumulation_steps", 2}},
                 world(4))
            .rfind("test.json: train_batch_size 32 != micro 3 * accumulation 2 * world 4", 0) == 0);
  // Floor division can leave a remainder: 30 / 4 / 2 = 3, and 4 * 3 * 2 = 24.
  CHECK(error_of({{"train_batch_size", 30}, {"train_micro_batch_size_per_gpu", 4}}, world(2))
            .rfind("test.json: train_batch_size 30 != micro 4 * accumulation 3 * world 2", 0) == 0);
  CHECK(error_of({{"train_batch_size", 10}}, world(4)).rfind("test.json: train_batch_size 10 != micro 2 * accumulation "
                                                             "1 * world 4",
                                                             0) == 0);
  auto ok = resolved(
      {{"train_batch_size", 24}, {"train_micro_batch_size_per_gpu", 3}, {"gradient_accumulation_steps", 2}}, 4);
  CHECK(ok.tb == 24);
}

TEST_CASE("a derived value of 0 is an error naming the key") {
  CHECK(error_of({{"train_batch_size", 2}, {"train_micro_batch_size_per_gpu", 4}}, world(1)) ==
        "test.json: gradient_accumulation_steps: train_batch_size 2 / micro 4 / world 1 gives 0 (expected >= 1)");
  CHECK(error_of({{"train_batch_size", 2}}, world(4)) ==
        "test.json: train_micro_batch_size_per_gpu: train_batch_size 2 / world 4 gives 0 (expected >= 1)");
  CHECK(error_of({{"train_batch_size", 4}, {"gradient_accumulation_steps", 8}}, world(1)) ==
        "test.json: train_micro_batch_size_per_gpu: train_batch_size 4 / world 1 / accumulation 8 gives 0 (expected >= "
        "1)");
}

TEST_CASE("derive_batch_sizes on its own, over a grid") {
  Diagnostics diag{"grid"};
  for (int64_t w : {1, 2, 3, 8})
    for (int64_t mb : {1, 2, 5})
      for (int64_t ga : {1, 4}) {
        const int64_t tb = mb * ga * w;
        auto check = [&](BatchSizes b) {
          CHECK(b.train_batch_size == tb);
          CHECK(b.micro_batch_size == mb);
          CHECK(b.accumulation_steps == ga);
        };
        check(derive_batch_sizes(tb, mb, ga, w, diag));
        check(derive_batch_sizes(tb, mb, std::nullopt, w, diag));
        check(derive_batch_sizes(tb, std::nullopt, ga, w, diag));
        check(derive_batch_sizes(std::nullopt, mb, ga, w, diag));
      }
}

TEST_CASE("batch sizes beyond what the trainer can count are errors, never wrapped around") {
  // Each count is held in an int.
  CHECK(error_of({{"train_micro_batch_size_per_gpu", 4294967297LL}}) ==
        "test.json: train_micro_batch_size_per_gpu: 4294967297 is out of range (expected 1..2147483647)");
  CHECK(error_of({{"train_micro_batch_size_per_gpu", 1}, {"gradient_accumulation_steps", 2147483648LL}}) ==
        "test.json: gradient_accumulation_steps: 2147483648 is out of range (expected 1..2147483647)");
  // Derived from train_batch_size.
  CHECK(
      error_of({{"train_batch_size", 1LL << 40}, {"train_micro_batch_size_per_gpu", 1}}, world(2)) ==
      "test.json: train_batch_size 1099511627776 gives 549755813888 accumulation steps (expected at most 2147483647)");
  CHECK(error_of({{"train_batch_size", 1LL << 40}}, world(2)) ==
        "test.json: train_batch_size 1099511627776 gives a micro-batch of 549755813888 (expected at most 2147483647)");
  // MB * GA * W past 2^63.
  CHECK(error_of({{"train_micro_batch_size_per_gpu", 2147483647}, {"gradient_accumulation_steps", 2147483647}},
                 world(4)) ==
        "test.json: micro 2147483647 * accumulation 2147483647 * world 4 does not fit in 64 bits (expected a global "
        "batch below 2^63)");
  auto big = resolved({{"train_micro_batch_size_per_gpu", 2147483647}, {"gradient_accumulation_steps", 2147483647}}, 2);
  CHECK(big.tb == 2LL * 2147483647LL * 2147483647LL);
}
