#include "kernels/cpu/rmsnorm.hpp"

#include <omp.h>

#include "check.hpp"

using namespace zt::cpu;
using namespace zt::test;

namespace {

// y = x / sqrt(mean(x²) + eps) · w per row of C; also the rows' rstd.
struct RmsRef {
  VecD out, rstd;
};

RmsRef rmsnorm_ref(const VecD& x, const VecD& w, int N, int C, double eps) {
  RmsRef r{VecD(x.size()), VecD(N)};
  for (int n = 0; n < N; n++) {
    double sq = 0;
    for (int c = 0; c < C; c++) sq += x[size_t(n) * C + c] * x[size_t(n) * C + c];
    const double s = 1.0 / std::sqrt(sq / C + eps);
    for (int c = 0; c < C; c++) r.out[size_t(n) * C + c] = x[size_t(n) * C + c] * s * w[c];
    r.rstd[n] = s;
  }
  return r;
}

// The q/k head norms of a packed qkv [N, (NH + 2·NKV)·hd], written out head by head.
VecD qk_norm_ref(const VecD& qkv, const VecD& qw, const VecD& kw, int N, int NH, int NKV, int hd, double eps) {
  VecD out = qkv;  // the v heads pass unchanged
  const size_t stride = size_t(NH + 2 * NKV) * hd;
  for (int n = 0; n < N; n++)
    for (int h = 0; h < NH + NKV; h++) {
      const size_t at = size_t(n) * stride + size_t(h) * hd;
      VecD head(qkv.begin() + long(at), qkv.begin() + long(at + hd));
      const VecD y = rmsnorm_ref(head, h < NH ? qw : kw, 1, hd, eps).out;
      std::copy(y.begin(), y.end(), out.begin() + long(at));
    }
  return out;
}

}  // namespace

TEST_CASE("rmsnorm_forward matches a double reference", "[kernels][rmsnorm]") {
  for (auto [N, C] : {std::pair{1, 1}, std::pair{5, 7}, std::pair{9, 200}, std::pair{3, 64}}) {
    INFO("N=" << N << " C=" << C);
    Vec x = random_vec(size_t(N) * C, 21, 3.0f), w = random_vec(C, 22);
    Vec y(x.size()), rstd(N);
    rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), N, C, 1e-6f);
    auto ref = rmsnorm_ref(to_double(x), to_double(w), N, C, 1e-6);
    require_close(y, ref.out, 1e-5, 1e-6);
    require_close(rstd, ref.rstd, 1e-6, 1e-7);
  }
  // eps matters where the mean square is small.
  Vec x(16, 1e-3f), w(16, 1.0f), y(16), rstd(1);
  rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), 1, 16, 1e-5f);
  CHECK(rstd[0] == Approx(1.0 / std::sqrt(1e-6 + 1e-5)).epsilon(1e-6));
}

TEST_CASE("rmsnorm_backward accumulates finite-difference gradients", "[kernels][rmsnorm]") {
  for (auto [N, C] : {std::pair{5, 7}, std::pair{3, 131}}) {
    INFO("N=" << N << " C=" << C);
    Vec x = random_vec(size_t(N) * C, 31), w = random_vec(C, 32), dy = random_vec(x.size(), 34);
    Vec y(x.size()), rstd(N);
    rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), N, C, 1e-5f);
    Vec dx0 = random_vec(x.size(), 35), dw0 = random_vec(C, 36);
    Vec dx = dx0, dw = dw0;
    rmsnorm_backward(dx.data(), dw.data(), dy.data(), x.data(), w.data(), rstd.data(), N, C);
    const VecD xd = to_double(x), wd = to_double(w), dyd = to_double(dy);
    auto gx = numeric_grad([&](const VecD& v) { return rmsnorm_ref(v, wd, N, C, 1e-5).out; }, xd, dyd);
    auto gw = numeric_grad([&](const VecD& v) { return rmsnorm_ref(xd, v, N, C, 1e-5).out; }, wd, dyd);
    require_close(dx, plus(dx0, gx), 1e-5, 2e-5);
    require_close(dw, plus(dw0, gw), 1e-5, 2e-5);
  }
}

TEST_CASE("qk_norm normalises each q and k head with its weights and copies v", "[kernels][rmsnorm]") {
  for (auto [N, NH, NKV, hd] : {std::tuple{3, 4, 2, 8}, std::tuple{2, 2, 1, 6}, std::tuple{2, 3, 3, 20}}) {
    INFO("N=" << N << " NH=" << NH << " NKV=" << NKV << " hd=" << hd);
    const size_t n = size_t(N) * (NH + 2 * NKV) * hd;
    Vec qkv = random_vec(n, 41, 2.0f), qw = random_vec(hd, 42), kw = random_vec(hd, 43);
    Vec out = random_vec(n, 44), rstd(size_t(N) * (NH + NKV));  // out is overwritten everywhere
    qk_norm_forward(out.data(), rstd.data(), qkv.data(), qw.data(), kw.data(), N, NH, NKV, hd, 1e-6f);
    const VecD qwd = to_double(qw), kwd = to_double(kw);
    require_close(out, qk_norm_ref(to_double(qkv), qwd, kwd, N, NH, NKV, hd, 1e-6), 1e-5, 1e-6);

    Vec dy = random_vec(n, 45);
    Vec dx0 = random_vec(n, 46), dqw0 = random_vec(hd, 47), dkw0 = random_vec(hd, 48);
    Vec dx = dx0, dqw = dqw0, dkw = dkw0;
    qk_norm_backward(dx.data(), dqw.data(), dkw.data(), dy.data(), qkv.data(), qw.data(), kw.data(), rstd.data(), N,
                     NH, NKV, hd);
    const VecD xd = to_double(qkv), dyd = to_double(dy);
    auto gx = numeric_grad([&](const VecD& v) { return qk_norm_ref(v, qwd, kwd, N, NH, NKV, hd, 1e-6); }, xd, dyd);
    auto gq = numeric_grad([&](const VecD& v) { return qk_norm_ref(xd, v, kwd, N, NH, NKV, hd, 1e-6); }, qwd, dyd);
    auto gk = numeric_grad([&](const VecD& v) { return qk_norm_ref(xd, qwd, v, N, NH, NKV, hd, 1e-6); }, kwd, dyd);
    require_close(dx, plus(dx0, gx), 1e-5, 2e-5);
    require_close(dqw, plus(dqw0, gq), 1e-5, 2e-5);
    require_close(dkw, plus(dkw0, gk), 1e-5, 2e-5);
  }
}

TEST_CASE("rmsnorm gives the same bits for any thread count", "[kernels][rmsnorm]") {
  const int N = 33, C = 300;
  Vec x = random_vec(size_t(N) * C, 51), w = random_vec(C, 52), dy = random_vec(x.size(), 53);
  auto run = [&](int threads) {
    const int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    Vec y(x.size()), rstd(N), dx(x.size()), dw(C);
    rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), N, C, 1e-6f);
    rmsnorm_backward(dx.data(), dw.data(), dy.data(), x.data(), w.data(), rstd.data(), N, C);
    omp_set_num_threads(saved);
    y.insert(y.end(), dx.begin(), dx.end());
    y.insert(y.end(), dw.begin(), dw.end());
    return y;
  };
  REQUIRE(run(1) == run(3));
}
