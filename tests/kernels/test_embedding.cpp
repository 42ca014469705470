#include "kernels/cpu/embedding.hpp"

#include <omp.h>

#include "check.hpp"

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
