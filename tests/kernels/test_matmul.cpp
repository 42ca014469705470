#include "kernels/cpu/gemm.hpp"
#include "kernels/cpu/matmul.hpp"

#include "check.hpp"
#include "core/error.hpp"

using namespace zt;
using namespace zt::cpu;
using namespace zt::test;

namespace {

// W(c, o) of a weight in either layout.
double weight_at(const VecD& w, int c, int o, int C, int OC, WeightLayout layout) {
  return layout == WeightLayout::InputMajor ? w[size_t(c) * OC + o] : w[size_t(o) * C + c];
}

VecD matmul_ref(const VecD& x, const VecD& w, const VecD* bias, int N, int C, int OC, WeightLayout layout) {
  VecD y(size_t(N) * OC);
  for (int n = 0; n < N; n++)
    for (int o = 0; o < OC; o++) {
      double acc = bias ? (*bias)[o] : 0.0;
      for (int c = 0; c < C; c++) acc += x[size_t(n) * C + c] * weight_at(w, c, o, C, OC, layout);
      y[size_t(n) * OC + o] = acc;
    }
  return y;
}

struct Case {
  int N, C, OC;
};

}  // namespace

TEST_CASE("matmul_forward matches a double reference in both weight layouts", "[kernels][matmul]") {
  for (Case s : {Case{1, 1, 1}, Case{7, 13, 11}, Case{37, 65, 300}}) {
    for (WeightLayout layout : {WeightLayout::InputMajor, WeightLayout::OutputMajor}) {
      for (bool with_bias : {true, false}) {
        INFO("N=" << s.N << " C=" << s.C << " OC=" << s.OC << " output-major=" << (layout == WeightLayout::OutputMajor)
                  << " bias=" << with_bias);
        Vec x = random_vec(size_t(s.N) * s.C, 1), w = random_vec(size_t(s.C) * s.OC, 2), b = random_vec(s.OC, 3);
        Vec y = random_vec(size_t(s.N) * s.OC, 4);  // garbage: forward overwrites
        matmul_forward(y.data(), x.data(), w.data(), with_bias ? b.data() : nullptr, s.N, s.C, s.OC, layout);
        VecD bd = to_double(b);
        require_close(y, matmul_ref(to_double(x), to_double(w), with_bias ? &bd : nullptr, s.N, s.C, s.OC, layout),
                      1e-5, 1e-5);
      }
    }
  }
}

TEST_CASE("matmul_backward accumulates finite-difference gradients", "[kernels][matmul]") {
  for (Case s : {Case{5, 7, 3}, Case{9, 4, 261}}) {
    for (WeightLayout layout : {WeightLayout::InputMajor, WeightLayout::OutputMajor}) {
      INFO("N=" << s.N << " C=" << s.C << " OC=" << s.OC << " output-major=" << (layout == WeightLayout::OutputMajor));
      const int N = s.N, C = s.C, OC = s.OC;
      Vec x = random_vec(size_t(N) * C, 11), w = random_vec(size_t(C) * OC, 12), b = random_vec(OC, 13);
      Vec dy = random_vec(size_t(N) * OC, 14);
      // The buffers hold earlier gradients: backward must add to them.
      Vec dx0 = random_vec(x.size(), 15), dw0 = random_vec(w.size(), 16), db0 = random_vec(b.size(), 17);
      Vec dx = dx0, dw = dw0, db = db0;
      matmul_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), N, C, OC, layout);

      VecD xd = to_double(x), wd = to_double(w), bd = to_double(b), dyd = to_double(dy);
      auto gx = numeric_grad([&](const VecD& v) { return matmul_ref(v, wd, &bd, N, C, OC, layout); }, xd, dyd);
      auto gw = numeric_grad([&](const VecD& v) { return matmul_ref(xd, v, &bd, N, C, OC, layout); }, wd, dyd);
      auto gb = numeric_grad([&](const VecD& v) { return matmul_ref(xd, wd, &v, N, C, OC, layout); }, bd, dyd);
      require_close(dx, plus(dx0, gx), 1e-5, 1e-5);
      require_close(dw, plus(dw0, gw), 1e-5, 1e-5);
      require_close(db, plus(db0, gb), 1e-5, 1e-5);

      // Null outputs are skipped; the others are unaffected by that.
      Vec dx_only(x.size(), 0.0f);
      matmul_backward(dx_only.data(), nullptr, nullptr, dy.data(), x.data(), w.data(), N, C, OC, layout);
      require_close(dx_only, gx, 1e-5, 1e-5);
    }
  }
}

TEST_CASE("gemm reports what oneDNN rejects", "[kernels][matmul]") {
  Vec a(16, 1.0f), b(16, 1.0f), c(16, 0.0f);
  // lda smaller than the row length K is invalid for row-major A.
  REQUIRE_THROWS_AS(gemm(Trans::No, Trans::No, 4, 4, 4, 1.0f, a.data(), 2, b.data(), 4, 0.0f, c.data(), 4), Error);
  REQUIRE_THROWS_WITH(gemm(Trans::No, Trans::No, 4, 4, 4, 1.0f, a.data(), 2, b.data(), 4, 0.0f, c.data(), 4),
                      Catch::Contains("dnnl_sgemm") && Catch::Contains("lda=2"));
}
