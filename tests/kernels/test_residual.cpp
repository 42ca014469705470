#include "kernels/cpu/residual.hpp"

#include "check.hpp"

using namespace zt::cpu;
using namespace zt::test;

TEST_CASE("residual forward adds and backward passes the gradient to both inputs", "[kernels][residual]") {
  const size_t n = 1037;
  Vec a = random_vec(n, 111), b = random_vec(n, 112), y(n);
  residual_forward(y.data(), a.data(), b.data(), n);
  VecD want(n);
  for (size_t i = 0; i < n; i++) want[i] = double(a[i]) + double(b[i]);
  require_close(y, want, 1e-7, 1e-7);

  Vec dy = random_vec(n, 113), da0 = random_vec(n, 114), db0 = random_vec(n, 115), da = da0, db = db0;
  residual_backward(da.data(), db.data(), dy.data(), n);
  require_close(da, plus(da0, to_double(dy)), 1e-7, 1e-7);
  require_close(db, plus(db0, to_double(dy)), 1e-7, 1e-7);
  Vec only_b = db0;
  residual_backward(nullptr, only_b.data(), dy.data(), n);
  REQUIRE(only_b == db);
}

// As for the other kernels: the backward against central differences of the double-precision
// forward that the forward kernel is checked against above.
TEST_CASE("residual backward matches finite differences of the forward", "[kernels][residual][gradcheck]") {
  const size_t n = 257;
  Vec a = random_vec(n, 121), b = random_vec(n, 122), dy = random_vec(n, 123);
  const VecD ad = to_double(a), bd = to_double(b);
  auto sum = [n](const VecD& x, const VecD& y) {
    VecD out(n);
    for (size_t i = 0; i < n; i++) out[i] = x[i] + y[i];
    return out;
  };
  Vec da(n, 0.0f), db(n, 0.0f);
  residual_backward(da.data(), db.data(), dy.data(), n);
  require_close(da, numeric_grad([&](const VecD& x) { return sum(x, bd); }, ad, to_double(dy)), 1e-6, 1e-6);
  require_close(db, numeric_grad([&](const VecD& x) { return sum(ad, x); }, bd, to_double(dy)), 1e-6, 1e-6);
}
