#include <catch2/catch.hpp>

#include <numeric>

#include "zero/partition.hpp"

using namespace zt;

TEST_CASE("partition pads to world x alignment and tiles the flat buffer", "[partition]") {
  for (int world : {1, 2, 3, 4, 7}) {
    for (size_t numel : {size_t(1), size_t(63), size_t(1000), size_t(123457)}) {
      Partition p(numel, world, world - 1);
      CHECK(p.padded() >= numel);
      CHECK(p.padded() % (size_t(world) * Partition::kAlignment) == 0);
      CHECK(p.padded() - numel < size_t(world) * Partition::kAlignment);
      CHECK(p.shard_size() * size_t(world) == p.padded());
      size_t trained = 0;
      for (int r = 0; r < world; ++r) {
        CHECK(p.shard(r).begin == size_t(r) * p.shard_size());
        trained += p.trained(r).size();
      }
      CHECK(trained == numel);
    }
  }
}

TEST_CASE("pieces of a flat range follow the shard boundaries", "[partition]") {
  Partition p(1000, 4, 0);  // padded 1024, shards of 256
  REQUIRE(p.shard_size() == 256);
  auto c = p.pieces({200, 600});
  CHECK(c == std::vector<size_t>{56, 256, 88, 0});
  CHECK(std::accumulate(c.begin(), c.end(), size_t(0)) == 400);
  CHECK(p.pieces({0, 0}) == std::vector<size_t>{0, 0, 0, 0});
  CHECK(p.pieces({1023, 1024}) == std::vector<size_t>{0, 0, 0, 1});
  CHECK(Range{10, 20}.intersect({30, 40}).empty());
}
