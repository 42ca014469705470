#include <catch2/catch.hpp>

#include <numeric>

#include "core/trainable_space.hpp"
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

TEST_CASE("the trainable space: frozen tensors left out, runs merged across groups, pieces both ways",
          "[partition][frozen]") {
  // [a 10 | b 5 frozen] [c 7 | d 3] [e 4 frozen]: runs a (flat 0-10), c+d (15-25).
  ParamLayout layout;
  auto tensor = [](const char* name, size_t offset, size_t n, bool trainable) {
    TensorSpec t{name, offset, {n}};
    t.trainable = trainable;
    return t;
  };
  layout.groups = {{"g0", 0, 15, {tensor("a", 0, 10, true), tensor("b", 10, 5, false)}},
                   {"g1", 15, 10, {tensor("c", 15, 7, true), tensor("d", 22, 3, true)}},
                   {"g2", 25, 4, {tensor("e", 25, 4, false)}}};
  layout.total = 29;
  const TrainableSpace space(layout);
  CHECK(space.numel() == 20);
  CHECK_FALSE(space.identity());
  REQUIRE(space.runs().size() == 2);
  CHECK(space.runs()[1].flat == 15);
  CHECK(space.runs()[1].compact == 10);
  CHECK(space.runs()[1].size == 10);
  const auto in_flat = space.in_flat({5, 20});  // a's tail and c's head
  REQUIRE(in_flat.size() == 2);
  CHECK((in_flat[0].flat == 5 && in_flat[0].compact == 5 && in_flat[0].size == 5));
  CHECK((in_flat[1].flat == 15 && in_flat[1].compact == 10 && in_flat[1].size == 5));
  const auto in_compact = space.in_compact({8, 13});
  REQUIRE(in_compact.size() == 2);
  CHECK((in_compact[0].flat == 8 && in_compact[0].size == 2));
  CHECK((in_compact[1].flat == 15 && in_compact[1].compact == 10 && in_compact[1].size == 3));
  CHECK(space.in_flat({10, 15}).empty());
  CHECK(space.compact_at(12) == 10);  // inside b: the next trainable element, c's first
  CHECK(space.compact_at(25) == 20);
  const ParamLayout& compact = space.layout();
  CHECK(compact.total == 20);
  CHECK(compact.groups[2].size == 0);
  CHECK(compact.find("d")->offset == 17);
  CHECK(compact.find("b") == nullptr);
  layout.groups[0].tensors[1].trainable = layout.groups[2].tensors[0].trainable = true;
  CHECK(TrainableSpace(layout).identity());
}
