#include <catch2/catch.hpp>

#include <vector>

#include "core/error.hpp"
#include "data/index_permutation.hpp"

using namespace zt;

TEST_CASE("IndexPermutation is a bijection of [0, n)", "[data][permutation]") {
  for (uint64_t n : {1, 2, 3, 5, 16, 17, 255, 1000, 4097, 65537}) {
    for (uint64_t key : {0ull, 1ull, 0xDEADBEEFull}) {
      IndexPermutation p(n, key);
      std::vector<char> hit(n, 0);
      for (uint64_t i = 0; i < n; ++i) {
        uint64_t y = p(i);
        REQUIRE(y < n);
        REQUIRE(!hit[y]);
        hit[y] = 1;
      }
    }
  }
}

TEST_CASE("IndexPermutation depends on the key and shuffles", "[data][permutation]") {
  const uint64_t n = 1000;
  IndexPermutation a(n, 1), b(n, 2), a2(n, 1);
  int same_ab = 0, fixed = 0;
  for (uint64_t i = 0; i < n; ++i) {
    CHECK(a(i) == a2(i));
    same_ab += a(i) == b(i);
    fixed += a(i) == i;
  }
  CHECK(same_ab < 20);  // about 1 expected for independent permutations
  CHECK(fixed < 20);
  CHECK_THROWS_AS(a(n), zt::Error);
  CHECK_THROWS_AS(IndexPermutation(0, 1), zt::Error);
}
