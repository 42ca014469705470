#include "kernels/cpu/attention.hpp"

#include <limits>
#include <utility>

#include "check.hpp"
#include "packed_rows.hpp"

using namespace zt::cpu;
using namespace zt::test;

namespace {

struct AttentionRef {
  VecD out, lse;  // lse [B, NH, T]: log Σ_j exp(score) of each query row
};

// Textbook causal attention, one (batch, head, query) at a time.
AttentionRef attention_ref(const VecD& qkv, int B, int T, int C, int NH) {
  const int hs = C / NH;
  AttentionRef r{VecD(size_t(B) * T * C), VecD(size_t(B) * NH * T)};
  for (int b = 0; b < B; b++)
    for (int h = 0; h < NH; h++)
      for (int t = 0; t < T; t++) {
        const double* q = &qkv[(size_t(b) * T + t) * 3 * C + size_t(h) * hs];
        std::vector<double> score(t + 1);
        double maxval = -1e300;
        for (int j = 0; j <= t; j++) {
          const double* k = &qkv[(size_t(b) * T + j) * 3 * C + C + size_t(h) * hs];
          double dot = 0;
          for (int i = 0; i < hs; i++) dot += q[i] * k[i];
          score[j] = dot / std::sqrt(double(hs));
          maxval = std::max(maxval, score[j]);
        }
        double sum = 0;
        for (int j = 0; j <= t; j++) sum += std::exp(score[j] - maxval);
        r.lse[(size_t(b) * NH + h) * T + t] = maxval + std::log(sum);
        std::vector<double> a(t + 1);
        for (int j = 0; j <= t; j++) a[j] = std::exp(score[j] - maxval) / sum;
        double* y = &r.out[(size_t(b) * T + t) * C + size_t(h) * hs];
        for (int i = 0; i < hs; i++) {
          double acc = 0;
          for (int j = 0; j <= t; j++) acc += a[j] * qkv[(size_t(b) * T + j) * 3 * C + 2 * C + size_t(h) * hs + i];
          y[i] = acc;
        }
      }
  return r;
}

struct Shape {
  int B, T, C, NH;
};

}  // namespace

// Sequences longer than a block of query rows (kAttentionRows) too: 70 = 64 + 6.
TEST_CASE("attention_forward matches causal attention in double", "[kernels][attention]") {
  for (Shape s : {Shape{1, 1, 4, 1}, Shape{2, 5, 12, 3}, Shape{3, 17, 20, 2}, Shape{2, 70, 8, 2}}) {
    INFO("B=" << s.B << " T=" << s.T << " C=" << s.C << " NH=" << s.NH);
    Vec qkv = random_vec(size_t(s.B) * s.T * 3 * s.C, 61, 1.5f);
    Vec out = random_vec(size_t(s.B) * s.T * s.C, 62);  // forward overwrites both
    Vec lse = random_vec(size_t(s.B) * s.NH * s.T, 63);
    Vec scratch = random_vec(attention_scratch_floats(s.B, s.T, s.NH), 64);  // contents irrelevant
    attention_forward(out.data(), lse.data(), scratch.data(), qkv.data(), s.B, s.T, s.C, s.NH);
    auto ref = attention_ref(to_double(qkv), s.B, s.T, s.C, s.NH);
    require_close(out, ref.out, 1e-5, 1e-6);
    require_close(lse, ref.lse, 1e-5, 1e-6);
  }
}

TEST_CASE("attention_backward accumulates finite-difference gradients", "[kernels][attention]") {
  for (Shape s : {Shape{2, 5, 12, 3}, Shape{1, 7, 6, 1}, Shape{1, 70, 8, 2}}) {
    INFO("B=" << s.B << " T=" << s.T << " C=" << s.C << " NH=" << s.NH);
    Vec qkv = random_vec(size_t(s.B) * s.T * 3 * s.C, 71);
    Vec out(size_t(s.B) * s.T * s.C), lse(size_t(s.B) * s.NH * s.T);
    Vec scratch = random_vec(attention_scratch_floats(s.B, s.T, s.NH), 74);  // contents irrelevant
    attention_forward(out.data(), lse.data(), scratch.data(), qkv.data(), s.B, s.T, s.C, s.NH);
    Vec dy = random_vec(out.size(), 72);
    Vec dqkv0 = random_vec(qkv.size(), 73), dqkv = dqkv0;
    attention_backward(dqkv.data(), scratch.data(), dy.data(), qkv.data(), out.data(), lse.data(), s.B, s.T, s.C,
                       s.NH);
    auto g = numeric_grad([&](const VecD& v) { return attention_ref(v, s.B, s.T, s.C, s.NH).out; }, to_double(qkv),
                          to_double(dy));
    require_close(dqkv, plus(dqkv0, g), 1e-5, 2e-5);
  }
}

namespace {

struct GqaShape {
  int B, T, NH, NKV, hd;
  size_t qkv() const { return size_t(B) * T * (NH + 2 * NKV) * hd; }
};

// Grouped-query attention as transformers computes it: k and v heads repeated (repeat_kv) to NH,
// then causal attention per head over packed qkv [B, T, (NH + 2·NKV)·hd]; out [B, T, NH·hd]. With a
// window, the sliding-window mask of transformers' masking_utils: key j counts iff j > t - window.
AttentionRef gqa_ref(const VecD& qkv, const GqaShape& s, int window = 0) {
  const int ld = (s.NH + 2 * s.NKV) * s.hd, group = s.NH / s.NKV;
  AttentionRef r{VecD(size_t(s.B) * s.T * s.NH * s.hd), VecD(size_t(s.B) * s.NH * s.T)};
  for (int b = 0; b < s.B; b++)
    for (int h = 0; h < s.NH; h++) {
      const int kv = h / group;
      auto at = [&](int t, int head) { return &qkv[(size_t(b) * s.T + t) * ld + size_t(head) * s.hd]; };
      for (int t = 0; t < s.T; t++) {
        const int first = window > 0 ? std::max(0, t - window + 1) : 0;
        std::vector<double> score(t + 1);
        double maxval = -1e300;
        for (int j = first; j <= t; j++) {
          double dot = 0;
          for (int i = 0; i < s.hd; i++) dot += at(t, h)[i] * at(j, s.NH + kv)[i];
          score[j] = dot / std::sqrt(double(s.hd));
          maxval = std::max(maxval, score[j]);
        }
        double sum = 0;
        for (int j = first; j <= t; j++) sum += std::exp(score[j] - maxval);
        r.lse[(size_t(b) * s.NH + h) * s.T + t] = maxval + std::log(sum);
        std::vector<double> a(t + 1);
        for (int j = first; j <= t; j++) a[j] = std::exp(score[j] - maxval) / sum;
        for (int i = 0; i < s.hd; i++) {
          double acc = 0;
          for (int j = first; j <= t; j++) acc += a[j] * at(j, s.NH + s.NKV + kv)[i];
          r.out[((size_t(b) * s.T + t) * s.NH + h) * s.hd + i] = acc;
        }
      }
    }
  return r;
}

}  // namespace

TEST_CASE("gqa_attention matches repeat_kv attention in double: GQA, MQA and MHA", "[kernels][attention][gqa]") {
  for (GqaShape s : {GqaShape{2, 5, 4, 2, 6}, GqaShape{1, 7, 3, 1, 4}, GqaShape{2, 4, 2, 2, 5},
                     GqaShape{1, 70, 4, 2, 4}}) {
    INFO("B=" << s.B << " T=" << s.T << " NH=" << s.NH << " NKV=" << s.NKV << " hd=" << s.hd);
    Vec qkv = random_vec(s.qkv(), 101, 1.5f);
    Vec out = random_vec(size_t(s.B) * s.T * s.NH * s.hd, 102), lse = random_vec(size_t(s.B) * s.NH * s.T, 103);
    Vec scratch(attention_scratch_floats(s.B, s.T, s.NH));
    gqa_attention_forward(out.data(), lse.data(), scratch.data(), qkv.data(), s.B, s.T, s.NH, s.NKV, s.hd);
    auto ref = gqa_ref(to_double(qkv), s);
    require_close(out, ref.out, 1e-5, 1e-6);
    require_close(lse, ref.lse, 1e-5, 1e-6);

    Vec dy = random_vec(out.size(), 104);
    Vec dqkv0 = random_vec(qkv.size(), 105), dqkv = dqkv0;
    gqa_attention_backward(dqkv.data(), scratch.data(), dy.data(), qkv.data(), out.data(), lse.data(), s.B, s.T, s.NH,
                           s.NKV, s.hd);
    auto g = numeric_grad([&](const VecD& v) { return gqa_ref(v, s).out; }, to_double(qkv), to_double(dy));
    require_close(dqkv, plus(dqkv0, g), 1e-5, 2e-5);
  }
}

// Windows of one key (the query itself), shorter than a block of query rows, and across blocks.
TEST_CASE("sliding-window attention matches band attention in double, forward and backward",
          "[kernels][attention][window]") {
  struct Case {
    GqaShape s;
    int window;
  };
  for (Case c : {Case{{2, 9, 4, 2, 4}, 3}, Case{{1, 6, 2, 1, 4}, 1}, Case{{1, 90, 2, 1, 4}, 20},
                 Case{{1, 140, 2, 2, 2}, 70}}) {
    const GqaShape& s = c.s;
    INFO("B=" << s.B << " T=" << s.T << " NH=" << s.NH << " NKV=" << s.NKV << " hd=" << s.hd << " window=" << c.window);
    Vec qkv = random_vec(s.qkv(), 191, 1.5f);
    Vec out(size_t(s.B) * s.T * s.NH * s.hd), lse(size_t(s.B) * s.NH * s.T);
    Vec scratch(attention_scratch_floats(s.B, s.T, s.NH));
    gqa_attention_forward(out.data(), lse.data(), scratch.data(), qkv.data(), s.B, s.T, s.NH, s.NKV, s.hd, nullptr,
                          c.window);
    auto ref = gqa_ref(to_double(qkv), s, c.window);
    require_close(out, ref.out, 1e-5, 1e-6);
    require_close(lse, ref.lse, 1e-5, 1e-6);

    Vec dy = random_vec(out.size(), 192);
    Vec dqkv0 = random_vec(qkv.size(), 193), dqkv = dqkv0;
    gqa_attention_backward(dqkv.data(), scratch.data(), dy.data(), qkv.data(), out.data(), lse.data(), s.B, s.T, s.NH,
                           s.NKV, s.hd, nullptr, c.window);
    auto g = numeric_grad([&](const VecD& v) { return gqa_ref(v, s, c.window).out; }, to_double(qkv), to_double(dy));
    require_close(dqkv, plus(dqkv0, g), 1e-5, 2e-5);
  }
}

TEST_CASE("a window as long as the sequence is full causal attention, bit for bit", "[kernels][attention][window]") {
  const GqaShape s{2, 70, 4, 2, 8};
  const Vec qkv = random_vec(s.qkv(), 195, 1.5f), dy = random_vec(size_t(s.B) * s.T * s.NH * s.hd, 196);
  Vec scratch(attention_scratch_floats(s.B, s.T, s.NH));
  auto run = [&](int window) {
    Vec out(dy.size()), lse(size_t(s.B) * s.NH * s.T), dqkv(qkv.size(), 0.0f);
    gqa_attention_forward(out.data(), lse.data(), scratch.data(), qkv.data(), s.B, s.T, s.NH, s.NKV, s.hd, nullptr,
                          window);
    gqa_attention_backward(dqkv.data(), scratch.data(), dy.data(), qkv.data(), out.data(), lse.data(), s.B, s.T, s.NH,
                           s.NKV, s.hd, nullptr, window);
    return std::vector<Vec>{out, lse, dqkv};
  };
  CHECK(run(s.T) == run(0));
  CHECK(run(s.T - 1) != run(0));
}

// The work is skipped, not masked: keys far outside every window of a block of query rows hold NaN,
// which any product with them (even by a probability of 0) would carry into the block's outputs.
TEST_CASE("sliding-window attention never reads the keys before a block's band", "[kernels][attention][window]") {
  const GqaShape s{1, 240, 2, 1, 4};
  const int window = 8, poisoned = 100;  // keys [0, 100); blocks from row 128 on read keys >= 121
  const Vec qkv = random_vec(s.qkv(), 197, 1.5f), dy = random_vec(size_t(s.B) * s.T * s.NH * s.hd, 198);
  Vec bad = qkv;
  const size_t ld = size_t(s.NH + 2 * s.NKV) * s.hd;
  for (int t = 0; t < poisoned; t++)
    for (size_t i = size_t(s.NH) * s.hd; i < ld; i++) bad[size_t(t) * ld + i] = std::numeric_limits<float>::quiet_NaN();
  Vec scratch(attention_scratch_floats(s.B, s.T, s.NH));
  auto run = [&](const Vec& x) {
    Vec out(dy.size()), lse(size_t(s.B) * s.NH * s.T), dqkv(x.size(), 0.0f);
    gqa_attention_forward(out.data(), lse.data(), scratch.data(), x.data(), s.B, s.T, s.NH, s.NKV, s.hd, nullptr,
                          window);
    gqa_attention_backward(dqkv.data(), scratch.data(), dy.data(), x.data(), out.data(), lse.data(), s.B, s.T, s.NH,
                           s.NKV, s.hd, nullptr, window);
    return std::pair{out, dqkv};
  };
  const auto [clean_out, clean_d] = run(qkv);
  const auto [out, d] = run(bad);
  const int from = poisoned + window + kAttentionRows;  // rows whose block starts past the poison's reach
  const size_t O = size_t(s.NH) * s.hd;
  auto rows_from = [&](const Vec& v, size_t width) { return Vec(v.begin() + ptrdiff_t(from * width), v.end()); };
  CHECK(rows_from(out, O) == rows_from(clean_out, O));
  CHECK(rows_from(d, ld) == rows_from(clean_d, ld));
  CHECK(std::isnan(out[size_t(poisoned) * O]));  // a row whose window holds poisoned keys
}

TEST_CASE("multi-head attention is grouped-query attention with one q head per k/v head, bit for bit",
          "[kernels][attention][gqa]") {
  const int B = 2, T = 9, C = 24, NH = 3;
  Vec qkv = random_vec(size_t(B) * T * 3 * C, 111);
  Vec a(size_t(B) * T * C), b(a.size()), lse_a(size_t(B) * NH * T), lse_b(lse_a.size());
  Vec scratch(attention_scratch_floats(B, T, NH));
  attention_forward(a.data(), lse_a.data(), scratch.data(), qkv.data(), B, T, C, NH);
  gqa_attention_forward(b.data(), lse_b.data(), scratch.data(), qkv.data(), B, T, NH, NH, C / NH);
  REQUIRE(a == b);
  REQUIRE(lse_a == lse_b);
}

TEST_CASE("attention against a KV cache equals attention over the whole sequence, in any chunks, windows too",
          "[kernels][attention][kv_cache]") {
  struct Case {
    int NH, NKV, hd, window;
  };
  for (Case c : {Case{4, 2, 8, 0}, Case{3, 3, 8, 0}, Case{2, 1, 16, 0}, Case{4, 2, 8, 3}, Case{2, 1, 16, 1}}) {
    const int B = 2, T = 9, W = (c.NH + 2 * c.NKV) * c.hd, O = c.NH * c.hd;
    const Vec qkv = random_vec(size_t(B) * T * W, 131);
    Vec full(size_t(B) * T * O), lse(size_t(B) * c.NH * T), scratch(attention_scratch_floats(B, T, c.NH));
    gqa_attention_forward(full.data(), lse.data(), scratch.data(), qkv.data(), B, T, c.NH, c.NKV, c.hd, nullptr,
                          c.window);
    // A cache with a row for every position, and with a window a ring of the window's rows, which
    // the chunks wrap around.
    std::vector<int> rows{12};
    if (c.window > 0) rows.push_back(c.window);
    for (const int S : rows) {
      INFO("NH=" << c.NH << " NKV=" << c.NKV << " hd=" << c.hd << " window=" << c.window << " rows=" << S);
      // The sequence in chunks of 4, 1 and 4 tokens, each against what the cache holds.
      Vec k(size_t(B) * S * c.NKV * c.hd, 7.0f), v = k;
      int pos = 0;
      for (int chunk : {4, 1, 4}) {
        Vec part(size_t(B) * chunk * W), out(size_t(B) * chunk * O);
        for (int b = 0; b < B; b++)
          std::copy_n(qkv.begin() + (ptrdiff_t(b) * T + pos) * W, size_t(chunk) * W,
                      part.begin() + ptrdiff_t(b) * chunk * W);
        gqa_attention_cached_forward(out.data(), k.data(), v.data(), part.data(), B, chunk, pos, S, c.NH, c.NKV, c.hd,
                                     c.window);
        for (int b = 0; b < B; b++)
          for (int t = 0; t < chunk; t++)
            for (int i = 0; i < O; i++)
              REQUIRE(out[(size_t(b) * chunk + t) * O + i] ==
                      Approx(full[(size_t(b) * T + pos + t) * O + i]).epsilon(1e-5).margin(1e-6));
        pos += chunk;
      }
      // Row r holds the k and v heads of the last position p < T with p % S == r; a row no
      // position reached is untouched.
      for (int b = 0; b < B; b++)
        for (int r = 0; r < S; r++) {
          const int p = r < T ? r + (T - 1 - r) / S * S : -1;
          for (int i = 0; i < c.NKV * c.hd; i++) {
            const size_t at = (size_t(b) * S + r) * c.NKV * c.hd + i;
            const size_t src = (size_t(b) * T + p) * W + size_t(c.NH) * c.hd + i;
            REQUIRE(k[at] == (p >= 0 ? qkv[src] : 7.0f));
            REQUIRE(v[at] == (p >= 0 ? qkv[src + size_t(c.NKV) * c.hd] : 7.0f));
          }
        }
    }
  }
}

namespace {

// Samples that end inside a block of query rows and on its edges, one of a single token, and a
// row of one sample beside them.
PackedRows packed_rows() { return {2, 150, {{0, 5, 70, 71, 140}, {0}}}; }

struct GqaRun {
  Vec out, lse, dqkv;
};

// Forward, then backward accumulating onto dqkv0.
GqaRun run_gqa(const Vec& qkv, const Vec& dout, const Vec& dqkv0, const GqaShape& s,
               const zt::TokenSegment* segments, int window = 0) {
  GqaRun r{Vec(size_t(s.B) * s.T * s.NH * s.hd), Vec(size_t(s.B) * s.NH * s.T), dqkv0};
  Vec scratch(attention_scratch_floats(s.B, s.T, s.NH));
  gqa_attention_forward(r.out.data(), r.lse.data(), scratch.data(), qkv.data(), s.B, s.T, s.NH, s.NKV, s.hd, segments,
                        window);
  gqa_attention_backward(r.dqkv.data(), scratch.data(), dout.data(), qkv.data(), r.out.data(), r.lse.data(), s.B, s.T,
                         s.NH, s.NKV, s.hd, segments, window);
  return r;
}

struct PackedGqa {
  GqaShape shape;
  PackedRows rows;
  size_t width() const { return size_t(shape.NH + 2 * shape.NKV) * shape.hd; }
  size_t out_width() const { return size_t(shape.NH) * shape.hd; }
};

// Grouped-query (4 q heads over 2 k/v heads) and multi-head attention (GPT-2's: NKV = NH).
std::vector<PackedGqa> packed_cases() {
  const PackedRows p = packed_rows();
  return {{{p.B, p.T, 4, 2, 8}, p}, {{p.B, p.T, 3, 3, 4}, p}};
}

// Random inputs over c's rows (from `seed` on) and their run with the rows' segments.
struct PackedRun {
  Vec qkv, dout, dqkv0;
  GqaRun run;
};
PackedRun run_packed(const PackedGqa& c, uint64_t seed, int window = 0) {
  const GqaShape& s = c.shape;
  PackedRun r{random_vec(s.qkv(), seed, 1.5f), random_vec(size_t(s.B) * s.T * c.out_width(), seed + 1),
              random_vec(s.qkv(), seed + 2), {}};
  const zt::RowSegments segments = c.rows.segments();
  r.run = run_gqa(r.qkv, r.dout, r.dqkv0, s, segments.table(), window);
  return r;
}

}  // namespace

// Windows too (the band ANDed with the sample): shorter than a block of rows and across blocks.
TEST_CASE("packed rows: attention of every sample equals the sample run alone, forward and backward",
          "[kernels][attention][packed]") {
  for (const auto& [c, window] : {std::pair{packed_cases()[0], 0}, std::pair{packed_cases()[1], 0},
                                  std::pair{packed_cases()[0], 7}, std::pair{packed_cases()[1], 66}}) {
    const GqaShape& s = c.shape;
    INFO("NH=" << s.NH << " NKV=" << s.NKV << " hd=" << s.hd << " window=" << window);
    const PackedRun in = run_packed(c, 141, window);
    const GqaRun& packed = in.run;
    for (PackedRows::Sample x : c.rows.samples()) {
      INFO("sample of row " << x.b << " at [" << x.begin << ", " << x.end << ")");
      const GqaShape one{1, x.length(), s.NH, s.NKV, s.hd};
      const GqaRun alone =
          run_gqa(sample_rows(in.qkv, c.rows, x, c.width()), sample_rows(in.dout, c.rows, x, c.out_width()),
                  sample_rows(in.dqkv0, c.rows, x, c.width()), one, nullptr, window);
      require_close(sample_rows(packed.out, c.rows, x, c.out_width()), to_double(alone.out), 1e-6, 1e-7);
      require_close(sample_stats(packed.lse, c.rows, x, s.NH), to_double(alone.lse), 1e-6, 1e-7);
      require_close(sample_rows(packed.dqkv, c.rows, x, c.width()), to_double(alone.dqkv), 1e-6, 1e-7);
    }
  }
}

TEST_CASE("packed rows: no token sees another sample's, bit for bit", "[kernels][attention][packed]") {
  for (const PackedGqa& c : packed_cases()) {
    const GqaShape& s = c.shape;
    INFO("NH=" << s.NH << " NKV=" << s.NKV << " hd=" << s.hd);
    const PackedRun in = run_packed(c, 151);
    const GqaRun& base = in.run;
    const zt::RowSegments segments = c.rows.segments();
    const std::vector<PackedRows::Sample> samples = c.rows.samples();
    for (size_t a = 0; a < samples.size(); a++) {
      const PackedRows::Sample changed = samples[a];
      INFO("sample " << a << " changed: row " << changed.b << " [" << changed.begin << ", " << changed.end << ")");
      Vec qkv2 = in.qkv, dout2 = in.dout;
      put_sample_rows(qkv2, c.rows, changed, c.width(), random_vec(size_t(changed.length()) * c.width(), 160 + a));
      put_sample_rows(dout2, c.rows, changed, c.out_width(),
                      random_vec(size_t(changed.length()) * c.out_width(), 170 + a));
      const GqaRun r = run_gqa(qkv2, dout2, in.dqkv0, s, segments.table());
      const size_t O = c.out_width();
      CHECK(sample_rows(r.out, c.rows, changed, O) != sample_rows(base.out, c.rows, changed, O));
      for (PackedRows::Sample x : samples) {
        if (x.b == changed.b && x.begin == changed.begin) continue;
        INFO("unchanged sample: row " << x.b << " [" << x.begin << ", " << x.end << ")");
        CHECK(sample_rows(r.out, c.rows, x, c.out_width()) == sample_rows(base.out, c.rows, x, c.out_width()));
        CHECK(sample_stats(r.lse, c.rows, x, s.NH) == sample_stats(base.lse, c.rows, x, s.NH));
        CHECK(sample_rows(r.dqkv, c.rows, x, c.width()) == sample_rows(base.dqkv, c.rows, x, c.width()));
      }
    }
  }
}

TEST_CASE("packed rows: a table of one sample per row gives the bits of no table", "[kernels][attention][packed]") {
  const GqaShape s{2, 150, 4, 2, 8};
  const Vec qkv = random_vec(s.qkv(), 181, 1.5f), dout = random_vec(size_t(s.B) * s.T * s.NH * s.hd, 182);
  const Vec dqkv0 = random_vec(s.qkv(), 183);
  const zt::RowSegments whole(zt::cpu_device(), zt::MemSpace::Host, s.B, s.T);
  const GqaRun with = run_gqa(qkv, dout, dqkv0, s, whole.table()), without = run_gqa(qkv, dout, dqkv0, s, nullptr);
  CHECK(with.out == without.out);
  CHECK(with.lse == without.lse);
  CHECK(with.dqkv == without.dqkv);
}
