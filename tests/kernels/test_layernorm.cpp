#include "kernels/cpu/layernorm.hpp"

#include <omp.h>

#include "check.hpp"

using namespace zt::cpu;
using namespace zt::test;

namespace {

struct LayerNormRef {
  VecD out, mean, rstd;
};

LayerNormRef layernorm_ref(const VecD& x, const VecD& w, const VecD& b, int N, int C) {
  LayerNormRef r{VecD(x.size()), VecD(N), VecD(N)};
  for (int n = 0; n < N; n++) {
    double m = 0, v = 0;
    for (int c = 0; c < C; c++) m += x[size_t(n) * C + c];
    m /= C;
    for (int c = 0; c < C; c++) v += (x[size_t(n) * C + c] - m) * (x[size_t(n) * C + c] - m);
    v /= C;  // biased variance, as torch.nn.LayerNorm
    double s = 1.0 / std::sqrt(v + 1e-5);
    for (int c = 0; c < C; c++) r.out[size_t(n) * C + c] = (x[size_t(n) * C + c] - m) * s * w[c] + b[c];
    r.mean[n] = m;
    r.rstd[n] = s;
  }
  return r;
}

}  // namespace

TEST_CASE("layernorm_forward matches a double reference", "[kernels][layernorm]") {
  for (auto [N, C] : {std::pair{1, 1}, std::pair{5, 7}, std::pair{9, 200}}) {
    INFO("N=" << N << " C=" << C);
    // An offset mean and a wide scale: the variance must not lose precision to the mean.
    Vec x = random_vec(size_t(N) * C, 21, 3.0f);
    for (auto& v : x) v += 50.0f;
    Vec w = random_vec(C, 22), b = random_vec(C, 23);
    Vec y(x.size()), mean(N), rstd(N);
    layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C);
    auto ref = layernorm_ref(to_double(x), to_double(w), to_double(b), N, C);
    require_close(y, ref.out, 1e-5, 1e-5);
    require_close(mean, ref.mean, 1e-6, 1e-6);
    require_close(rstd, ref.rstd, 1e-5, 1e-6);
  }
}

TEST_CASE("layernorm_backward accumulates finite-difference gradients", "[kernels][layernorm]") {
  for (auto [N, C] : {std::pair{5, 7}, std::pair{3, 131}}) {
    INFO("N=" << N << " C=" << C);
    Vec x = random_vec(size_t(N) * C, 31), w = random_vec(C, 32), b = random_vec(C, 33);
    Vec dy = random_vec(x.size(), 34);
    Vec y(x.size()), mean(N), rstd(N);
    layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C);
    Vec dx0 = random_vec(x.size(), 35), dw0 = random_vec(C, 36), db0 = random_vec(C, 37);
    Vec dx = dx0, dw = dw0, db = db0;
    layernorm_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), mean.data(), rstd.data(), N, C);

    VecD xd = to_double(x), wd = to_double(w), bd = to_double(b), dyd = to_double(dy);
    auto gx = numeric_grad([&](const VecD& v) { return layernorm_ref(v, wd, bd, N, C).out; }, xd, dyd);
    auto gw = numeric_grad([&](const VecD& v) { return layernorm_ref(xd, v, bd, N, C).out; }, wd, dyd);
    auto gb = numeric_grad([&](const VecD& v) { return layernorm_ref(xd, wd, v, N, C).out; }, bd, dyd);
    require_close(dx, plus(dx0, gx), 1e-5, 2e-5);
    require_close(dw, plus(dw0, gw), 1e-5, 2e-5);
    require_close(db, plus(db0, gb), 1e-5, 2e-5);
  }
}

TEST_CASE("layernorm_backward gives the same bits for any thread count", "[kernels][layernorm]") {
  const int N = 33, C = 300;
  Vec x = random_vec(size_t(N) * C, 41), w = random_vec(C, 42), b = random_vec(C, 43), dy = random_vec(x.size(), 44);
  Vec y(x.size()), mean(N), rstd(N);
  layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C);
  auto run = [&](int threads) {
    const int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    Vec dx(x.size()), dw(C), db(C);
    layernorm_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), mean.data(), rstd.data(), N, C);
    omp_set_num_threads(saved);
    dx.insert(dx.end(), dw.begin(), dw.end());
    dx.insert(dx.end(), db.begin(), db.end());
    return dx;
  };
  REQUIRE(run(1) == run(3));
}
