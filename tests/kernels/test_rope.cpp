#include "kernels/cpu/rope.hpp"

#include "check.hpp"
#include "packed_rows.hpp"

using namespace zt::cpu;
using namespace zt::test;

namespace {

struct Heads {
  int B, T, NH, NKV, hd;
  size_t numel() const { return size_t(B) * T * (NH + 2 * NKV) * hd; }
};

// Tables of angles t·f_i for made-up frequencies.
void tables(const Heads& s, Vec& cos, Vec& sin, VecD& angle) {
  const int half = s.hd / 2;
  cos.resize(size_t(s.T) * half);
  sin.resize(cos.size());
  angle.resize(cos.size());
  for (int t = 0; t < s.T; t++)
    for (int i = 0; i < half; i++) {
      const size_t k = size_t(t) * half + i;
      angle[k] = t * std::pow(100.0, -double(i) / half);
      cos[k] = float(std::cos(angle[k]));
      sin[k] = float(std::sin(angle[k]));
    }
}

// transformers' apply_rotary_pos_emb on every q and k head: x·cos + rotate_half(x)·sin, with
// cos and sin repeated over the two halves (emb = cat(freqs, freqs)).
VecD rope_ref(const VecD& qkv, const Heads& s, const Vec& cos, const Vec& sin) {
  VecD out = qkv;
  const int half = s.hd / 2;
  for (int bt = 0; bt < s.B * s.T; bt++)
    for (int h = 0; h < s.NH + s.NKV; h++) {
      const size_t at = (size_t(bt) * (s.NH + 2 * s.NKV) + h) * s.hd;
      const size_t row = size_t(bt % s.T) * half;
      for (int i = 0; i < s.hd; i++) {
        const double rotated = i < half ? -qkv[at + i + half] : qkv[at + i - half];
        out[at + i] = qkv[at + i] * cos[row + i % half] + rotated * sin[row + i % half];
      }
    }
  return out;
}

}  // namespace

TEST_CASE("rope_forward rotates q and k heads as transformers does, v untouched", "[kernels][rope]") {
  for (Heads s : {Heads{1, 1, 1, 1, 2}, Heads{2, 5, 4, 2, 8}, Heads{1, 7, 3, 1, 16}}) {
    INFO("B=" << s.B << " T=" << s.T << " NH=" << s.NH << " NKV=" << s.NKV << " hd=" << s.hd);
    Vec cos, sin;
    VecD angle;
    tables(s, cos, sin, angle);
    Vec qkv = random_vec(s.numel(), 61);
    const VecD want = rope_ref(to_double(qkv), s, cos, sin);
    rope_forward(qkv.data(), cos.data(), sin.data(), s.B, s.T, s.NH, s.NKV, s.hd);
    require_close(qkv, want, 1e-6, 1e-7);
  }
}

TEST_CASE("rope_backward accumulates the transpose: finite differences, and forward undone", "[kernels][rope]") {
  const Heads s{2, 6, 4, 2, 8};
  Vec cos, sin;
  VecD angle;
  tables(s, cos, sin, angle);
  const Vec x = random_vec(s.numel(), 71), dy = random_vec(s.numel(), 72);
  Vec dx = dy;  // in place: the gradient of what forward produced becomes that of its input
  rope_backward(dx.data(), cos.data(), sin.data(), s.B, s.T, s.NH, s.NKV, s.hd);
  auto g = numeric_grad([&](const VecD& v) { return rope_ref(v, s, cos, sin); }, to_double(x), to_double(dy));
  require_close(dx, g, 1e-5, 1e-6);
  // A rotation's transpose is its inverse.
  Vec y = x;
  rope_forward(y.data(), cos.data(), sin.data(), s.B, s.T, s.NH, s.NKV, s.hd);
  rope_backward(y.data(), cos.data(), sin.data(), s.B, s.T, s.NH, s.NKV, s.hd);
  require_close(y, to_double(x), 1e-6, 1e-6);
}

TEST_CASE("packed rows: positions restart with each sample, forward and backward", "[kernels][rope][packed]") {
  const PackedRows p{2, 11, {{0, 3, 4}, {0}}};
  const Heads s{p.B, p.T, 4, 2, 8};
  const size_t width = size_t(s.NH + 2 * s.NKV) * s.hd;
  Vec cos, sin;
  VecD angle;
  tables(s, cos, sin, angle);
  const zt::RowSegments segments = p.segments();
  for (int backward = 0; backward < 2; backward++) {
    INFO((backward ? "backward" : "forward"));
    auto rotate = backward ? rope_backward : rope_forward;
    Vec packed = random_vec(s.numel(), 191);
    const Vec x = packed;
    rotate(packed.data(), cos.data(), sin.data(), s.B, s.T, s.NH, s.NKV, s.hd, segments.table());
    for (PackedRows::Sample one : p.samples()) {
      INFO("row " << one.b << " [" << one.begin << ", " << one.end << ")");
      Vec alone = sample_rows(x, p, one, width);
      rotate(alone.data(), cos.data(), sin.data(), 1, one.length(), s.NH, s.NKV, s.hd, nullptr);
      CHECK(sample_rows(packed, p, one, width) == alone);
    }
  }
}
