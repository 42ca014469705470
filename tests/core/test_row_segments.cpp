// RowSegments: where each row's samples start (cu_seqlens within the row) as the table of each
// token's sample the kernels read, and starts that cannot be refused by name.
#include <catch2/catch.hpp>

#include <vector>

#include "core/row_segments.hpp"

using namespace zt;

TEST_CASE("row segments: every token knows its sample, and the starts read back", "[core][segments]") {
  RowSegments r(cpu_device(), MemSpace::Host, 3, 8);
  CHECK(r.batch() == 3);
  CHECK(r.seq() == 8);
  CHECK(r.starts(2) == std::vector<int32_t>{0});  // one sample per row until told otherwise
  r.reset(2, 6);
  r.set_row(0, std::vector<int32_t>{0, 1, 4});
  CHECK(r.starts(0) == std::vector<int32_t>{0, 1, 4});
  CHECK(r.starts(1) == std::vector<int32_t>{0});
  const std::vector<std::pair<int, int>> want{{0, 1}, {1, 4}, {1, 4}, {1, 4}, {4, 6}, {4, 6},
                                              {0, 6}, {0, 6}, {0, 6}, {0, 6}, {0, 6}, {0, 6}};
  for (size_t i = 0; i < want.size(); i++) {
    INFO("token " << i);
    CHECK(r.table()[i].begin == want[i].first);
    CHECK(r.table()[i].end == want[i].second);
  }
  CHECK(r.padding_from(0) == 6);  // no padding: the row's end
  CHECK(r.padding_table()[1] == 6);
  r.set_row(1, std::vector<int32_t>{0, 2}, true);
  CHECK(r.padding_table()[1] == 2);  // what the device copies for the experts' statistics
  // The bounds of every token, and where each row's padding begins.
  CHECK(RowSegments::bytes(3, 8) == 3 * 8 * 2 * sizeof(int32_t) + 3 * sizeof(int32_t));
}

TEST_CASE("row segments: starts out of order, outside the row or not at 0 are refused by name", "[core][segments]") {
  RowSegments r(cpu_device(), MemSpace::Host, 2, 8);
  auto set = [&](int b, std::vector<int32_t> starts) { r.set_row(b, starts); };
  REQUIRE_THROWS_WITH(set(0, {1, 3}), Catch::Contains("row 0's first sample must start at 0 (got 1)"));
  REQUIRE_THROWS_WITH(set(1, {}), Catch::Contains("row 1's first sample must start at 0 (got no starts)"));
  REQUIRE_THROWS_WITH(set(1, {0, 5, 5}), Catch::Contains("row 1, start 2 = 5 must lie in (5, 8)"));
  REQUIRE_THROWS_WITH(set(0, {0, 8}), Catch::Contains("row 0, start 1 = 8 must lie in (0, 8)"));
  REQUIRE_THROWS_WITH(set(2, {0}), Catch::Contains("row 2 is outside [0, 2)"));
  REQUIRE_THROWS_WITH(r.reset(3, 8), Catch::Contains("3 rows of 8 tokens do not fit the room for 2 rows of 8"));
}
