// Fused causal attention against kernels/cpu/attention: outputs, the saved log-sum-exp (against a
// double-precision reference) and the gradients; head sizes 4, 32, 48, 64 and 128; T = 1 and T
// not a multiple of the tile; fp32 (CUDA cores) and bf16 (tensor cores); forward and backward twice
// give the same bits; grouped-query attention against multi-head attention over repeated heads, and
// against the CPU's grouped-query attention at the llama family's head sizes; packed rows (samples
// side by side, attention inside each) against each sample run alone, and no sample seeing
// another's; sliding windows (with packed rows too) against the CPU's, and the keys before a
// query tile's band never read.
#include <cmath>
#include <limits>

#include "cuda_test_support.hpp"
#include "kernels/cpu/attention.hpp"
#include "kernels/cuda/cuda_attention.hpp"
#include "packed_rows.hpp"

using namespace zt;
using namespace zt::test;

namespace {

struct Shape {
  int B, T, C, NH;
};

std::vector<Shape> shapes() {
  std::vector<Shape> s{
      {1, 1, 32, 1},    // T = 1
      {2, 5, 12, 3},    // head size 4
      {1, 70, 64, 2},   // head size 32, two 64-row tiles, the last one partial
      {1, 67, 128, 2},  // head size 64
      {1, 35, 96, 2},   // head size 48 (compiled for 64, channels past 48 zero)
      {1, 35, 128, 1},  // head size 128, two 32-row tiles
  };
  if (!small_shapes()) {
    s.push_back({4, 1024, 768, 12});  // GPT-2 124M
    s.push_back({2, 257, 1024, 8});   // head size 128, a last tile of one row
  }
  return s;
}

// lse[b, h, t] = log Σ_{j<=t} exp(q_t·k_j/√hs) in double.
std::vector<double> lse_reference(const Vec& qkv, Shape s) {
  const int hs = s.C / s.NH;
  std::vector<double> lse(size_t(s.B) * s.NH * s.T);
  for (int b = 0; b < s.B; b++)
    for (int h = 0; h < s.NH; h++)
      for (int t = 0; t < s.T; t++) {
        const float* q = &qkv[(size_t(b) * s.T + t) * 3 * s.C + size_t(h) * hs];
        std::vector<double> score(size_t(t) + 1);
        double mx = -1e300;
        for (int j = 0; j <= t; j++) {
          const float* k = &qkv[(size_t(b) * s.T + j) * 3 * s.C + s.C + size_t(h) * hs];
          double dot = 0;
          for (int i = 0; i < hs; i++) dot += double(q[i]) * k[i];
          score[size_t(j)] = dot / std::sqrt(double(hs));
          mx = std::max(mx, score[size_t(j)]);
        }
        double sum = 0;
        for (double x : score) sum += std::exp(x - mx);
        lse[(size_t(b) * s.NH + h) * s.T + t] = mx + std::log(sum);
      }
  return lse;
}

struct Run {
  Bytes out, lse, dqkv;
};

Run run(DType dt, const DeviceTensor& qkv, const DeviceTensor& dout, const Vec& dqkv0, Shape s) {
  const size_t rows = size_t(s.B) * s.T;
  DeviceTensor out(dt, rows * s.C), dqkv(dt, dqkv0);
  DeviceBuffer lse(size_t(s.B) * s.NH * s.T * 4);
  DeviceBuffer scratch(cuda::attention_backward_scratch_floats(s.B, s.T, s.NH) * 4);
  cuda::attention_forward(dt, out.ptr(), lse.as<float>(), qkv.ptr(), s.B, s.T, s.C, s.NH, nullptr);
  cuda::attention_backward(dt, dqkv.ptr(), scratch.as<float>(), dout.ptr(), qkv.ptr(), out.ptr(), lse.as<float>(), s.B,
                           s.T, s.C, s.NH, nullptr);
  device_sync();
  return {out.bits(), lse.download_bytes(), dqkv.bits()};
}

}  // namespace

TEST_CASE("attention forward and backward match the CPU", "[cuda][attention]") {
  for (DType dt : {DType::F32, DType::BF16})
    for (Shape s : shapes()) {
      INFO(dtype_name(dt) << " B=" << s.B << " T=" << s.T << " C=" << s.C << " NH=" << s.NH);
      const size_t rows = size_t(s.B) * s.T;
      const Vec qkv = rounded(dt, random_vec(rows * 3 * s.C, 71, 1.5f));
      const Vec dout = rounded(dt, random_vec(rows * s.C, 72));
      // fp32 accumulates onto a random base (the += semantics, exactly checked); bf16 onto zeros, or the
      // per-element check would compare the rounding of base + gradient where the two cancel.
      const Vec dqkv0 = dt == DType::F32 ? random_vec(rows * 3 * s.C, 73) : Vec(rows * 3 * s.C, 0.0f);
      Vec out_ref(rows * s.C), lse_cpu(size_t(s.B) * s.NH * s.T), dqkv_ref = dqkv0;
      Vec scratch(cpu::attention_scratch_floats(s.B, s.T, s.NH));
      cpu::attention_forward(out_ref.data(), lse_cpu.data(), scratch.data(), qkv.data(), s.B, s.T, s.C, s.NH);
      // In bf16 the GPU's backward reads the bf16-rounded output (for D = Σ dout·out, as FlashAttention
      // does), the CPU its fp32 output: D's rounding error enters every dscore of a row, so the
      // gradients differ by up to about 0.015 in absolute terms (0.2% norm-wise), hence atol 3e-2.
      cpu::attention_backward(dqkv_ref.data(), scratch.data(), dout.data(), qkv.data(), out_ref.data(), lse_cpu.data(),
                              s.B, s.T, s.C, s.NH);

      DeviceTensor dqkv_in(dt, qkv), ddout(dt, dout);
      const Run got = run(dt, dqkv_in, ddout, dqkv0, s);
      require_close(dt, decode(dt, got.out), out_ref, {1e-2});
      const std::vector<double> lse_ref = lse_reference(qkv, s);
      const Vec lse = decode(DType::F32, got.lse);
      for (size_t i = 0; i < lse.size(); i++) {
        INFO("lse " << i);
        REQUIRE(std::abs(double(lse[i]) - lse_ref[i]) <= 1e-5 * std::max(1.0, std::abs(lse_ref[i])));
      }
      require_close(dt, decode(dt, got.dqkv), dqkv_ref, {3e-2});

      const Run again = run(dt, dqkv_in, ddout, dqkv0, s);
      CHECK(again.out == got.out);
      CHECK(again.lse == got.lse);
      CHECK(again.dqkv == got.dqkv);
    }
}

TEST_CASE("attention rejects head sizes above 128 and C not divisible by NH", "[cuda][attention][errors]") {
  REQUIRE_THROWS_WITH(cuda::attention_forward(DType::F32, nullptr, nullptr, nullptr, 1, 4, 512, 2, nullptr),
                      Catch::Contains("attention_forward") && Catch::Contains("head size 256"));
  REQUIRE_THROWS_WITH(cuda::attention_backward(DType::F32, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 1, 4,
                                               100, 3, nullptr),
                      Catch::Contains("attention_backward") && Catch::Contains("not a multiple of NH = 3"));
}

TEST_CASE("grouped-query attention equals multi-head attention over repeated key/value heads", "[cuda][attention]") {
  // The reference: each query head's key/value head copied into a multi-head qkv for the CPU op;
  // the key/value gradients of the copies summed back per shared head.
  struct Gqa {
    int B, T, NH, NKV, hs;
  };
  for (DType dt : {DType::F32, DType::BF16})
    for (Gqa g : {Gqa{2, 70, 6, 2, 16}, Gqa{1, 67, 4, 1, 64}, Gqa{1, 33, 2, 2, 32}}) {
      INFO(dtype_name(dt) << " B=" << g.B << " T=" << g.T << " NH=" << g.NH << " NKV=" << g.NKV << " hs=" << g.hs);
      const int C = g.NH * g.hs, group = g.NH / g.NKV;
      const size_t rows = size_t(g.B) * g.T, width = size_t(g.NH + 2 * g.NKV) * g.hs;
      const Vec qkv = rounded(dt, random_vec(rows * width, 81, 1.5f));
      const Vec dout = rounded(dt, random_vec(rows * C, 82));
      Vec mha(rows * 3 * C);
      for (size_t r = 0; r < rows; r++)
        for (int h = 0; h < g.NH; h++)
          for (int d = 0; d < g.hs; d++) {
            const float* src = &qkv[r * width];
            float* dst = &mha[r * 3 * C];
            dst[h * g.hs + d] = src[h * g.hs + d];
            dst[C + h * g.hs + d] = src[(g.NH + h / group) * g.hs + d];
            dst[2 * C + h * g.hs + d] = src[(g.NH + g.NKV + h / group) * g.hs + d];
          }
      Vec out_ref(rows * C), lse_cpu(size_t(g.B) * g.NH * g.T), dmha(rows * 3 * C, 0.0f);
      Vec scratch(cpu::attention_scratch_floats(g.B, g.T, g.NH));
      cpu::attention_forward(out_ref.data(), lse_cpu.data(), scratch.data(), mha.data(), g.B, g.T, C, g.NH);
      cpu::attention_backward(dmha.data(), scratch.data(), dout.data(), mha.data(), out_ref.data(), lse_cpu.data(), g.B,
                              g.T, C, g.NH);
      Vec dqkv_ref(rows * width, 0.0f);
      for (size_t r = 0; r < rows; r++)
        for (int h = 0; h < g.NH; h++)
          for (int d = 0; d < g.hs; d++) {
            const float* src = &dmha[r * 3 * C];
            float* dst = &dqkv_ref[r * width];
            dst[h * g.hs + d] = src[h * g.hs + d];
            dst[(g.NH + h / group) * g.hs + d] += src[C + h * g.hs + d];
            dst[(g.NH + g.NKV + h / group) * g.hs + d] += src[2 * C + h * g.hs + d];
          }

      const cuda::AttentionShape shape{g.B, g.T, g.NH, g.NKV, g.hs};
      DeviceTensor dqkv_in(dt, qkv), ddout(dt, dout), out(dt, rows * C), dqkv(dt, rows * width);
      DeviceBuffer lse(size_t(g.B) * g.NH * g.T * 4),
          scratch_d(cuda::attention_backward_scratch_floats(g.B, g.T, g.NH) * 4);
      cuda::attention_forward(dt, out.ptr(), lse.as<float>(), dqkv_in.ptr(), shape, nullptr);
      cuda::attention_backward(dt, dqkv.ptr(), scratch_d.as<float>(), ddout.ptr(), dqkv_in.ptr(), out.ptr(),
                               lse.as<float>(), shape, nullptr);
      device_sync();
      require_close(dt, out.values(), out_ref, {1e-2});
      require_close(dt, dqkv.values(), dqkv_ref, {3e-2});
    }
}

TEST_CASE("attention refuses query heads that do not share key/value heads evenly", "[cuda][attention][errors]") {
  REQUIRE_THROWS_WITH(
      cuda::attention_forward(DType::BF16, nullptr, nullptr, nullptr, cuda::AttentionShape{1, 4, 6, 4, 16}, nullptr),
      Catch::Contains("attention_forward") && Catch::Contains("NKV = 4"));
}

TEST_CASE("grouped-query attention matches the CPU's at the llama family's head sizes", "[cuda][attention]") {
  // hd 16 and 32: llama-tiny and qwen3-tiny; 24: the Qwen3 fixture; 64: Llama 3.2 1B (32 query
  // heads over 8 key/value heads); 128: Qwen3. The input gradient is accumulated onto a random base
  // in fp32 (onto zeros in bf16, as above) and written over NaNs.
  struct Gqa {
    int B, T, NH, NKV, hs;
  };
  std::vector<Gqa> shapes{{2, 32, 4, 2, 16}, {1, 40, 4, 2, 32}, {1, 33, 4, 2, 24}, {1, 70, 8, 2, 64},
                          {1, 37, 4, 1, 128}};
  if (!small_shapes()) {
    shapes.push_back({2, 1024, 32, 8, 64});
    shapes.push_back({1, 2048, 16, 8, 128});
  }
  for (DType dt : {DType::F32, DType::BF16})
    for (Gqa g : shapes) {
      INFO(dtype_name(dt) << " B=" << g.B << " T=" << g.T << " NH=" << g.NH << " NKV=" << g.NKV << " hs=" << g.hs);
      const size_t rows = size_t(g.B) * g.T, width = size_t(g.NH + 2 * g.NKV) * g.hs, C = size_t(g.NH) * g.hs;
      const Vec qkv = rounded(dt, random_vec(rows * width, 91, 1.5f));
      const Vec dout = rounded(dt, random_vec(rows * C, 92));
      const Vec dqkv0 = dt == DType::F32 ? random_vec(rows * width, 93) : Vec(rows * width, 0.0f);
      Vec out_ref(rows * C), lse_cpu(size_t(g.B) * g.NH * g.T), dqkv_ref = dqkv0, fresh_ref(rows * width, 0.0f);
      Vec scratch(cpu::attention_scratch_floats(g.B, g.T, g.NH));
      cpu::gqa_attention_forward(out_ref.data(), lse_cpu.data(), scratch.data(), qkv.data(), g.B, g.T, g.NH, g.NKV,
                                 g.hs);
      cpu::gqa_attention_backward(dqkv_ref.data(), scratch.data(), dout.data(), qkv.data(), out_ref.data(),
                                  lse_cpu.data(), g.B, g.T, g.NH, g.NKV, g.hs);
      cpu::gqa_attention_backward(fresh_ref.data(), scratch.data(), dout.data(), qkv.data(), out_ref.data(),
                                  lse_cpu.data(), g.B, g.T, g.NH, g.NKV, g.hs);

      const cuda::AttentionShape shape{g.B, g.T, g.NH, g.NKV, g.hs};
      DeviceTensor dqkv_in(dt, qkv), ddout(dt, dout), out(dt, rows * C);
      DeviceBuffer lse(size_t(g.B) * g.NH * g.T * 4);
      DeviceBuffer scratch_d(cuda::attention_backward_scratch_floats(g.B, g.T, g.NH) * 4);
      cuda::attention_forward(dt, out.ptr(), lse.as<float>(), dqkv_in.ptr(), shape, nullptr);
      auto backward = [&](const Vec& base, GradInto into) {
        DeviceTensor dqkv(dt, base);
        cuda::attention_backward(dt, dqkv.ptr(), scratch_d.as<float>(), ddout.ptr(), dqkv_in.ptr(), out.ptr(),
                                 lse.as<float>(), shape, nullptr, into);
        device_sync();
        return dqkv.bits();
      };
      const Bytes accumulated = backward(dqkv0, GradInto::Accumulate);
      require_close(dt, out.values(), out_ref, {1e-2});
      require_close(dt, decode(dt, accumulated), dqkv_ref, {3e-2});
      const Bytes written = backward(Vec(rows * width, std::numeric_limits<float>::quiet_NaN()), GradInto::Overwrite);
      require_close(dt, decode(dt, written), fresh_ref, {3e-2});
      CHECK(backward(dqkv0, GradInto::Accumulate) == accumulated);
    }
}

namespace {

// Packed rows against the tiles: samples that start inside a 64-row tile (so that a row's first key
// tile holds only other samples' keys), cross tile edges, a sample of one token, and a row of two.
PackedRows packed_rows() { return {2, 140, {{0, 5, 70, 71, 130}, {0, 64}}}; }

struct GqaCase {
  int NH, NKV, hs;
};

// Grouped-query attention at the llama family's head size 16, GPT-2's multi-head attention, and
// head size 128 (32-row tiles in fp32).
std::vector<GqaCase> packed_cases() { return {{4, 2, 16}, {2, 2, 32}, {2, 1, 128}}; }

struct PackedRun {
  Vec out, lse, dqkv;
  Bytes out_bits, lse_bits, dqkv_bits;
};

// Forward, then backward written over NaNs, for B rows of T tokens; segments in device memory or
// null.
PackedRun run_packed(DType dt, const Vec& qkv, const Vec& dout, int B, int T, const GqaCase& c,
                     const TokenSegment* segments, int window = 0) {
  const size_t rows = size_t(B) * T, width = size_t(c.NH + 2 * c.NKV) * c.hs;
  const cuda::AttentionShape shape{B, T, c.NH, c.NKV, c.hs, segments, window};
  DeviceTensor x(dt, qkv), dy(dt, dout), out(dt, rows * c.NH * c.hs);
  DeviceTensor dx(dt, Vec(rows * width, std::numeric_limits<float>::quiet_NaN()));
  DeviceBuffer lse(size_t(B) * c.NH * T * 4), scratch(cuda::attention_backward_scratch_floats(B, T, c.NH) * 4);
  cuda::attention_forward(dt, out.ptr(), lse.as<float>(), x.ptr(), shape, nullptr);
  cuda::attention_backward(dt, dx.ptr(), scratch.as<float>(), dy.ptr(), x.ptr(), out.ptr(), lse.as<float>(), shape,
                           nullptr, GradInto::Overwrite);
  device_sync();
  PackedRun r{out.values(), decode(DType::F32, lse.download_bytes()), dx.values(), out.bits(), lse.download_bytes(),
              dx.bits()};
  return r;
}

// The table of p's samples in device memory.
DeviceBuffer device_segments(const PackedRows& p) {
  const RowSegments host = p.segments();
  return upload_raw(std::vector<TokenSegment>(host.table(), host.table() + size_t(p.B) * p.T));
}

}  // namespace

// Sliding windows too (the band ANDed with the sample): shorter than a tile and across tiles.
TEST_CASE("packed rows: attention of every sample equals the sample run alone, and the CPU's",
          "[cuda][attention][packed][window]") {
  const PackedRows p = packed_rows();
  const DeviceBuffer segments = device_segments(p);
  const RowSegments host_segments = p.segments();
  for (DType dt : {DType::F32, DType::BF16})
    for (GqaCase c : packed_cases())
      for (int window : {0, 5, 70}) {
        INFO(dtype_name(dt) << " NH=" << c.NH << " NKV=" << c.NKV << " hs=" << c.hs << " window=" << window);
        const size_t rows = size_t(p.B) * p.T, width = size_t(c.NH + 2 * c.NKV) * c.hs, C = size_t(c.NH) * c.hs;
        const Vec qkv = rounded(dt, random_vec(rows * width, 201, 1.5f)), dout = rounded(dt, random_vec(rows * C, 202));
        const PackedRun packed = run_packed(dt, qkv, dout, p.B, p.T, c, segments.as<TokenSegment>(), window);

        Vec out_cpu(rows * C), lse_cpu(size_t(p.B) * c.NH * p.T), dqkv_cpu(rows * width, 0.0f);
        Vec scratch(cpu::attention_scratch_floats(p.B, p.T, c.NH));
        cpu::gqa_attention_forward(out_cpu.data(), lse_cpu.data(), scratch.data(), qkv.data(), p.B, p.T, c.NH, c.NKV,
                                   c.hs, host_segments.table(), window);
        cpu::gqa_attention_backward(dqkv_cpu.data(), scratch.data(), dout.data(), qkv.data(), out_cpu.data(),
                                    lse_cpu.data(), p.B, p.T, c.NH, c.NKV, c.hs, host_segments.table(), window);
        require_close(dt, packed.out, out_cpu, {1e-2});
        require_close(DType::F32, packed.lse, lse_cpu, {0}, 1e-6);
        // bf16: D's rounding (above) weighs more in a window of a few keys, where each row's
        // probabilities are few and large: up to 0.049 measured at window 5 (the norm-wise error
        // stays 0.4%, as without a window).
        require_close(dt, packed.dqkv, dqkv_cpu, {window > 0 && window < 16 ? 6e-2 : 3e-2});

        for (PackedRows::Sample s : p.samples()) {
          INFO("sample of row " << s.b << " at [" << s.begin << ", " << s.end << ")");
          const PackedRun alone = run_packed(dt, sample_rows(qkv, p, s, width), sample_rows(dout, p, s, C), 1,
                                             s.length(), c, nullptr, window);
          require_close(dt, sample_rows(packed.out, p, s, C), alone.out, {1e-2});
          require_close(DType::F32, sample_stats(packed.lse, p, s, c.NH), alone.lse, {0}, 1e-6);
          require_close(dt, sample_rows(packed.dqkv, p, s, width), alone.dqkv, {3e-2});
        }
        const PackedRun again = run_packed(dt, qkv, dout, p.B, p.T, c, segments.as<TokenSegment>(), window);
        CHECK(again.out_bits == packed.out_bits);
        CHECK(again.lse_bits == packed.lse_bits);
        CHECK(again.dqkv_bits == packed.dqkv_bits);
      }
}

TEST_CASE("packed rows: no token sees another sample's on the GPU, bit for bit", "[cuda][attention][packed]") {
  const PackedRows p = packed_rows();
  const DeviceBuffer segments = device_segments(p);
  const std::vector<PackedRows::Sample> samples = p.samples();
  for (DType dt : {DType::F32, DType::BF16})
    for (GqaCase c : {GqaCase{4, 2, 16}, GqaCase{2, 1, 128}}) {
      INFO(dtype_name(dt) << " NH=" << c.NH << " NKV=" << c.NKV << " hs=" << c.hs);
      const size_t rows = size_t(p.B) * p.T, width = size_t(c.NH + 2 * c.NKV) * c.hs, C = size_t(c.NH) * c.hs;
      const Vec qkv = rounded(dt, random_vec(rows * width, 211, 1.5f)), dout = rounded(dt, random_vec(rows * C, 212));
      const PackedRun base = run_packed(dt, qkv, dout, p.B, p.T, c, segments.as<TokenSegment>());
      for (size_t a : {size_t(1), size_t(3)}) {  // a sample that starts inside a tile, one of a single token
        const PackedRows::Sample changed = samples[a];
        INFO("changed: row " << changed.b << " [" << changed.begin << ", " << changed.end << ")");
        Vec qkv2 = qkv, dout2 = dout;
        put_sample_rows(qkv2, p, changed, width, rounded(dt, random_vec(size_t(changed.length()) * width, 220 + a)));
        put_sample_rows(dout2, p, changed, C, rounded(dt, random_vec(size_t(changed.length()) * C, 230 + a)));
        const PackedRun r = run_packed(dt, qkv2, dout2, p.B, p.T, c, segments.as<TokenSegment>());
        CHECK(sample_rows(r.out, p, changed, C) != sample_rows(base.out, p, changed, C));
        for (PackedRows::Sample s : samples) {
          if (s.b == changed.b && s.begin == changed.begin) continue;
          INFO("unchanged: row " << s.b << " [" << s.begin << ", " << s.end << ")");
          const size_t esz = dtype_size(dt);
          CHECK(sample_rows(r.out_bits, p, s, C * esz) == sample_rows(base.out_bits, p, s, C * esz));
          CHECK(sample_stats(r.lse, p, s, c.NH) == sample_stats(base.lse, p, s, c.NH));  // fp32, finite
          CHECK(sample_rows(r.dqkv_bits, p, s, width * esz) == sample_rows(base.dqkv_bits, p, s, width * esz));
        }
      }
    }
}

// The key tiles a query tile walks start at its band's first key: keys before it hold NaN, which a
// product with them (even by a probability of 0) would carry into the tile's outputs.
TEST_CASE("sliding-window attention never reads the key tiles before a query tile's band on the GPU",
          "[cuda][attention][window]") {
  const int T = 256, window = 8, poisoned = 100;  // keys [0, 100); tiles from row 192 on start at key 128
  const int from = 192;
  for (DType dt : {DType::F32, DType::BF16})
    for (GqaCase c : {GqaCase{2, 1, 16}, GqaCase{2, 1, 128}}) {
      INFO(dtype_name(dt) << " hs=" << c.hs);
      const size_t width = size_t(c.NH + 2 * c.NKV) * c.hs, C = size_t(c.NH) * c.hs;
      const Vec qkv = rounded(dt, random_vec(size_t(T) * width, 251, 1.5f)), dout = rounded(dt, random_vec(T * C, 252));
      Vec bad = qkv;
      for (int t = 0; t < poisoned; t++)
        for (size_t i = C; i < width; i++) bad[size_t(t) * width + i] = std::numeric_limits<float>::quiet_NaN();
      const PackedRun clean = run_packed(dt, qkv, dout, 1, T, c, nullptr, window);
      const PackedRun got = run_packed(dt, bad, dout, 1, T, c, nullptr, window);
      const size_t esz = dtype_size(dt);
      CHECK(Bytes(got.out_bits.begin() + ptrdiff_t(from * C * esz), got.out_bits.end()) ==
            Bytes(clean.out_bits.begin() + ptrdiff_t(from * C * esz), clean.out_bits.end()));
      CHECK(Bytes(got.dqkv_bits.begin() + ptrdiff_t(from * width * esz), got.dqkv_bits.end()) ==
            Bytes(clean.dqkv_bits.begin() + ptrdiff_t(from * width * esz), clean.dqkv_bits.end()));
      CHECK(std::isnan(got.out[size_t(poisoned) * C]));  // a row whose window holds poisoned keys
    }
}

TEST_CASE("soft-capped attention at another scale (Gemma's) matches the CPU's, forward and backward",
          "[cuda][attention][softcap]") {
  // query_pre_attn_scalar's scale and a cap tight enough to bend the scores, full and sliding; the
  // input gradient written over NaNs. hd 16 runs the fp32 and bf16 tile kernels, 64 the tensor cores'.
  struct Case {
    int B, T, NH, NKV, hs, window;
  };
  const Case cases[] = {{2, 40, 4, 2, 16, 0}, {1, 70, 4, 2, 64, 0}, {1, 70, 4, 2, 64, 24}, {2, 33, 2, 1, 16, 8}};
  const AttentionScores scores{0.4f, 1.5f};
  for (DType dt : {DType::F32, DType::BF16})
    for (const Case& g : cases) {
      INFO(dtype_name(dt) << " B=" << g.B << " T=" << g.T << " NH=" << g.NH << " NKV=" << g.NKV << " hs=" << g.hs
                          << " window=" << g.window);
      const size_t rows = size_t(g.B) * g.T, width = size_t(g.NH + 2 * g.NKV) * g.hs, C = size_t(g.NH) * g.hs;
      const Vec qkv = rounded(dt, random_vec(rows * width, 191, 1.5f));
      const Vec dout = rounded(dt, random_vec(rows * C, 192));
      Vec out_ref(rows * C), lse_cpu(size_t(g.B) * g.NH * g.T), dqkv_ref(rows * width, 0.0f);
      Vec scratch(cpu::attention_scratch_floats(g.B, g.T, g.NH));
      cpu::gqa_attention_forward(out_ref.data(), lse_cpu.data(), scratch.data(), qkv.data(), g.B, g.T, g.NH, g.NKV,
                                 g.hs, nullptr, g.window, scores);
      cpu::gqa_attention_backward(dqkv_ref.data(), scratch.data(), dout.data(), qkv.data(), out_ref.data(),
                                  lse_cpu.data(), g.B, g.T, g.NH, g.NKV, g.hs, nullptr, g.window, scores);
      // The cap changes what attention computes: the CPU's output without it differs.
      Vec plain(rows * C), lse_plain(lse_cpu.size());
      cpu::gqa_attention_forward(plain.data(), lse_plain.data(), scratch.data(), qkv.data(), g.B, g.T, g.NH, g.NKV,
                                 g.hs, nullptr, g.window);
      double moved = 0.0;
      for (size_t i = 0; i < plain.size(); ++i) moved = std::max(moved, double(std::abs(plain[i] - out_ref[i])));
      CHECK(moved > 0.05);

      const cuda::AttentionShape shape{g.B, g.T, g.NH, g.NKV, g.hs, nullptr, g.window, scores};
      DeviceTensor x(dt, qkv), dy(dt, dout), out(dt, rows * C);
      DeviceTensor dx(dt, Vec(rows * width, std::numeric_limits<float>::quiet_NaN()));
      DeviceBuffer lse(size_t(g.B) * g.NH * g.T * 4);
      DeviceBuffer scratch_d(cuda::attention_backward_scratch_floats(g.B, g.T, g.NH) * 4);
      cuda::attention_forward(dt, out.ptr(), lse.as<float>(), x.ptr(), shape, nullptr);
      cuda::attention_backward(dt, dx.ptr(), scratch_d.as<float>(), dy.ptr(), x.ptr(), out.ptr(), lse.as<float>(),
                               shape, nullptr, GradInto::Overwrite);
      device_sync();
      require_close(dt, out.values(), out_ref, {1e-2});
      require_close(dt, decode(DType::F32, lse.download_bytes()), lse_cpu, {1e-2});
      require_close(dt, dx.values(), dqkv_ref, {3e-2});
    }
}
