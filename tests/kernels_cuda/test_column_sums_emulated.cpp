// The deterministic column sums (lib/kernels/cuda/column_sums.cuh) run directly on the emulator:
// the chunking stays within the grid and the scratch for any shape, and sums over several
// chunks of more rows than the minimum match a double-precision reference. (Emulated build only;
// the GPU build reaches the same code through matmul and layernorm.)
#include "cuda_emulator.hpp"

#include <cmath>

#include "kernels/cuda/column_sums.cuh"
#include "cuda_test_support.hpp"

using namespace zt;
using namespace zt::test;

namespace {

struct SquareAndPlain {
  const float* x;
  int C;
  void operator()(int r, int c, float (&acc)[2]) const {
    const float v = x[size_t(r) * C + c];
    acc[0] += v * v;
    acc[1] += v;
  }
};

}  // namespace

TEST_CASE("column_chunking stays within the grid and the scratch", "[cuda][column_sums]") {
  struct Case {
    int N, C, K, min_rows;
    size_t capacity;
  };
  for (Case k : {Case{100000, 50304, 1, 256, size_t(2) << 20}, Case{20000000, 1, 1, 256, size_t(1) << 30},
                 Case{1000, 40, 2, 32, 400}, Case{1, 768, 2, 256, 1536}, Case{0, 8, 1, 256, 8}}) {
    INFO("N=" << k.N << " C=" << k.C << " K=" << k.K << " capacity=" << k.capacity);
    const cuda::ColumnChunking c = cuda::column_chunking(k.N, k.C, k.K, k.min_rows, k.capacity, "test");
    CHECK(c.rows_per_chunk >= k.min_rows);
    CHECK(size_t(c.chunks) * c.rows_per_chunk >= size_t(k.N));
    CHECK(c.chunks <= 65535);
    CHECK(size_t(c.chunks) * k.K * k.C <= k.capacity);
    CHECK(size_t(c.chunks - 1) * c.rows_per_chunk < size_t(std::max(k.N, 1)));  // no empty chunk
  }
  REQUIRE_THROWS_WITH(cuda::column_chunking(10, 100, 2, 256, 199, "op"), Catch::Contains("op: 100 columns"));
}

TEST_CASE("column_sums over many chunks match a double reference", "[cuda][column_sums]") {
  const int N = 1000, C = 40;
  const Vec x = random_vec(size_t(N) * C, 131);
  // Scratch for 5 chunks: 200 rows each instead of the minimum 32.
  const cuda::ColumnChunking chunking = cuda::column_chunking(N, C, 2, 32, 2 * C * 5, "test");
  REQUIRE(chunking.chunks == 5);
  REQUIRE(chunking.rows_per_chunk == 200);
  Vec squares = random_vec(size_t(C), 132), sums = random_vec(size_t(C), 133);
  const Vec squares0 = squares, sums0 = sums;
  std::vector<float> partials(size_t(2) * C * chunking.chunks);
  const cuda::ColumnOutputs<2, float> outputs{{squares.data(), sums.data()}};
  cuda::column_sums(outputs, partials.data(), N, C, chunking, SquareAndPlain{x.data(), C}, nullptr);
  device_sync();  // the kernels are queued on the stream, not run yet
  for (int c = 0; c < C; c++) {
    double sq = 0, s = 0;
    for (int r = 0; r < N; r++) {
      const double v = x[size_t(r) * C + c];
      sq += v * v;
      s += v;
    }
    CHECK(std::abs(squares[size_t(c)] - (squares0[size_t(c)] + sq)) <= 1e-5 * (std::abs(sq) + 1));
    CHECK(std::abs(sums[size_t(c)] - (sums0[size_t(c)] + s)) <= 1e-5 * (std::abs(s) + 10));
  }
}
