#include "kernels/cpu/embedding.hpp"

#include <omp.h>

#include "check.hpp"
#include "packed_rows.hpp"

using namespace zt::cpu;
using namespace zt::test;

namespace {

VecD embedding_ref(const std::vector<int32_t>& tokens, const VecD& wte, const VecD& wpe, int B, int T, int C) {
  VecD y(size_t(B) * T * C);
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++)
      for (int c = 0; c < C; c++)
        y[(size_t(b) * T + t) * C + c] = wte[size_t(tokens[size_t(b) * T + t]) * C + c] + wpe[size_t(t) * C + c];
  return y;
}

}  // namespace

TEST_CASE("embedding forward and backward with repeated tokens", "[kernels][embedding]") {
  const int B = 3, T = 5, C = 130, V = 9, maxT = 7;
  std::vector<int32_t> tokens = {1, 4, 4, 8, 0, 4, 4, 4, 2, 1, 0, 8, 8, 3, 1};
  Vec wte = random_vec(size_t(V) * C, 101), wpe = random_vec(size_t(maxT) * C, 102);
  Vec y = random_vec(size_t(B) * T * C, 103);
  embedding_forward(y.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
  VecD wted = to_double(wte), wped = to_double(wpe);
  require_close(y, embedding_ref(tokens, wted, wped, B, T, C), 1e-6, 1e-6);

  Vec dy = random_vec(y.size(), 104);
  Vec dwte0 = random_vec(wte.size(), 105), dwpe0 = random_vec(wpe.size(), 106);
  Vec dwte = dwte0, dwpe = dwpe0;
  embedding_backward(dwte.data(), dwpe.data(), dy.data(), tokens.data(), B, T, C);
  auto gte = numeric_grad([&](const VecD& v) { return embedding_ref(tokens, v, wped, B, T, C); }, wted, to_double(dy));
  auto gpe = numeric_grad([&](const VecD& v) { return embedding_ref(tokens, wted, v, B, T, C); }, wped, to_double(dy));
  require_close(dwte, plus(dwte0, gte), 1e-5, 1e-5);
  require_close(dwpe, plus(dwpe0, gpe), 1e-5, 1e-5);  // rows T..maxT-1 untouched

  SECTION("the same bits for any thread count") {
    auto run = [&](int threads) {
      const int saved = omp_get_max_threads();
      omp_set_num_threads(threads);
      Vec a(wte.size()), b(wpe.size());
      embedding_backward(a.data(), b.data(), dy.data(), tokens.data(), B, T, C);
      omp_set_num_threads(saved);
      a.insert(a.end(), b.begin(), b.end());
      return a;
    };
    REQUIRE(run(1) == run(2));
  }
}

TEST_CASE("embedding without learned positions: the token's row, and its gradient alone", "[kernels][embedding]") {
  const int B = 2, T = 4, C = 33, V = 6;
  std::vector<int32_t> tokens = {5, 0, 5, 2, 1, 1, 4, 5};
  Vec wte = random_vec(size_t(V) * C, 111);
  Vec y = random_vec(size_t(B) * T * C, 112);
  embedding_forward(y.data(), tokens.data(), wte.data(), nullptr, B, T, C);
  const VecD zeros(size_t(T) * C, 0.0);
  require_close(y, embedding_ref(tokens, to_double(wte), zeros, B, T, C), 0, 0);  // copies, exactly

  Vec dy = random_vec(y.size(), 113), dwte0 = random_vec(wte.size(), 114), dwte = dwte0;
  embedding_backward(dwte.data(), nullptr, dy.data(), tokens.data(), B, T, C);
  auto g = numeric_grad([&](const VecD& v) { return embedding_ref(tokens, v, zeros, B, T, C); }, to_double(wte),
                        to_double(dy));
  require_close(dwte, plus(dwte0, g), 1e-5, 1e-5);
}

TEST_CASE("packed rows: learned positions restart with each sample, forward and backward",
          "[kernels][embedding][packed]") {
  const PackedRows p{2, 9, {{0, 2, 7}, {0, 4}}};
  const int C = 20, V = 6;
  std::vector<int32_t> tokens(size_t(p.B) * p.T);
  for (size_t i = 0; i < tokens.size(); i++) tokens[i] = int32_t(i * 5 % V);
  const Vec wte = random_vec(size_t(V) * C, 121), wpe = random_vec(size_t(p.T) * C, 122);
  const Vec dy = random_vec(tokens.size() * C, 123), dwpe0 = random_vec(wpe.size(), 124);
  const zt::RowSegments segments = p.segments();
  Vec y(tokens.size() * C), dwte(wte.size(), 0.0f), dwpe = dwpe0;
  embedding_forward(y.data(), tokens.data(), wte.data(), wpe.data(), p.B, p.T, C, segments.table());
  embedding_backward(dwte.data(), dwpe.data(), dy.data(), tokens.data(), p.B, p.T, C, segments.table());
  // Each sample alone, its gradients added in the order of the samples: the same additions.
  Vec dwte_alone(wte.size(), 0.0f), dwpe_alone = dwpe0;
  for (PackedRows::Sample one : p.samples()) {
    INFO("row " << one.b << " [" << one.begin << ", " << one.end << ")");
    const std::vector<int32_t> ids = sample_rows(tokens, p, one, 1);
    Vec alone(size_t(one.length()) * C);
    embedding_forward(alone.data(), ids.data(), wte.data(), wpe.data(), 1, one.length(), C);
    CHECK(sample_rows(y, p, one, C) == alone);
    const Vec dy_alone = sample_rows(dy, p, one, C);
    embedding_backward(dwte_alone.data(), dwpe_alone.data(), dy_alone.data(), ids.data(), 1, one.length(), C);
  }
  CHECK(dwpe == dwpe_alone);
  CHECK(dwte == dwte_alone);
}
