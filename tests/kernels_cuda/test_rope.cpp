// Rotary embeddings against kernels/cpu/rope, fp32 and bf16, forward and backward in place on the q
// and k heads of a packed grouped-query projection, the v heads' bits untouched; head sizes of the
// presets and the published models, and one whose half is not a multiple of 8 (the scalar path);
// tables with more rows than T (the model's are max_seq_len long); twice gives the same bits;
// packed rows, whose positions restart with each sample.
#include <cmath>

#include "cuda_test_support.hpp"
#include "packed_rows.hpp"
#include "kernels/cpu/rope.hpp"
#include "kernels/cuda/cuda_rope.hpp"

using namespace zt;
using namespace zt::test;

namespace {

struct Shape {
  int B, T, NH, NKV, hd;
};

std::vector<Shape> shapes() {
  std::vector<Shape> s{{2, 5, 4, 2, 16}, {1, 9, 4, 2, 32}, {1, 7, 3, 1, 12}, {2, 6, 4, 2, 24}, {1, 5, 2, 1, 64},
                       {1, 3, 2, 2, 128}};
  if (!small_shapes()) s.push_back({4, 1024, 32, 8, 64});  // Llama 3.2 1B
  return s;
}

// cos and sin of t · theta^(-2i/hd) for t < rows, i < hd/2, as the model fills its tables.
void tables(Vec& cos, Vec& sin, int rows, int hd) {
  const int half = hd / 2;
  cos.resize(size_t(rows) * half);
  sin.resize(cos.size());
  for (int t = 0; t < rows; t++)
    for (int i = 0; i < half; i++) {
      const float angle = float(t) * float(std::pow(10000.0, -2.0 * i / hd));
      cos[size_t(t) * half + i] = float(std::cos(double(angle)));
      sin[size_t(t) * half + i] = float(std::sin(double(angle)));
    }
}

}  // namespace

TEST_CASE("rope forward and backward match the CPU, v heads untouched", "[cuda][rope]") {
  for (DType dt : {DType::F32, DType::BF16})
    for (Shape s : shapes())
      for (size_t pad : {0, 1}) {
        INFO(dtype_name(dt) << " B=" << s.B << " T=" << s.T << " NH=" << s.NH << " NKV=" << s.NKV << " hd=" << s.hd
                            << " pad=" << pad);
        const size_t width = size_t(s.NH + 2 * s.NKV) * s.hd, rows = size_t(s.B) * s.T, n = rows * width;
        Vec cos, sin;
        tables(cos, sin, s.T + 3, s.hd);
        DeviceTensor dcos(DType::F32, cos), dsin(DType::F32, sin);
        const Vec x = rounded(dt, random_vec(n, 61, 2.0f));
        for (int backward = 0; backward < 2; backward++) {
          INFO((backward ? "backward" : "forward"));
          Vec want = x;
          (backward ? cpu::rope_backward : cpu::rope_forward)(want.data(), cos.data(), sin.data(), s.B, s.T, s.NH,
                                                               s.NKV, s.hd, nullptr);
          auto run = [&] {
            DeviceTensor d(dt, x, pad);
            (backward ? cuda::rope_backward : cuda::rope_forward)(dt, d.ptr(), static_cast<float*>(dcos.ptr()),
                                                                  static_cast<float*>(dsin.ptr()), s.B, s.T, s.NH,
                                                                  s.NKV, s.hd, nullptr, nullptr);
            device_sync();
            return d.bits();
          };
          const Bytes got = run();
          require_close(dt, decode(dt, got), want, {1e-2});
          const Bytes xb = encode(dt, x);
          const size_t esz = dtype_size(dt), v_at = size_t(s.NH + s.NKV) * s.hd;
          for (size_t r = 0; r < rows; r++) {
            INFO("row " << r);
            const size_t at = (r * width + v_at) * esz;
            REQUIRE(std::memcmp(got.data() + at, xb.data() + at, size_t(s.NKV) * s.hd * esz) == 0);
          }
          CHECK(run() == got);
        }
      }
}

TEST_CASE("rope_backward undoes rope_forward", "[cuda][rope]") {
  const Shape s{2, 9, 4, 2, 32};
  const size_t n = size_t(s.B) * s.T * (s.NH + 2 * s.NKV) * s.hd;
  Vec cos, sin;
  tables(cos, sin, s.T, s.hd);
  DeviceTensor dcos(DType::F32, cos), dsin(DType::F32, sin);
  const Vec x = random_vec(n, 62);
  DeviceTensor d(DType::F32, x);
  auto* c = static_cast<float*>(dcos.ptr());
  auto* sn = static_cast<float*>(dsin.ptr());
  cuda::rope_forward(DType::F32, d.ptr(), c, sn, s.B, s.T, s.NH, s.NKV, s.hd, nullptr);
  cuda::rope_backward(DType::F32, d.ptr(), c, sn, s.B, s.T, s.NH, s.NKV, s.hd, nullptr);
  device_sync();
  require_close(DType::F32, d.values(), x, {0}, 1e-6);
}

TEST_CASE("rope rejects an odd head size", "[cuda][rope][errors]") {
  REQUIRE_THROWS_WITH(cuda::rope_forward(DType::F32, nullptr, nullptr, nullptr, 1, 4, 2, 1, 15, nullptr),
                      Catch::Contains("rope_forward") && Catch::Contains("head size 15 is odd"));
}

TEST_CASE("packed rows: the GPU's positions restart with each sample as the CPU's", "[cuda][rope][packed]") {
  const PackedRows p{2, 11, {{0, 3, 4}, {0, 8}}};
  const Shape s{p.B, p.T, 4, 2, 16};
  const size_t n = size_t(p.B) * p.T * size_t(s.NH + 2 * s.NKV) * s.hd;
  Vec cos, sin;
  tables(cos, sin, s.T, s.hd);
  DeviceTensor dcos(DType::F32, cos), dsin(DType::F32, sin);
  const RowSegments host = p.segments();
  const DeviceBuffer segments = upload_raw(std::vector<TokenSegment>(host.table(), host.table() + size_t(p.B) * p.T));
  for (DType dt : {DType::F32, DType::BF16})
    for (int backward = 0; backward < 2; backward++) {
      INFO(dtype_name(dt) << (backward ? " backward" : " forward"));
      const Vec x = rounded(dt, random_vec(n, 71, 2.0f));
      Vec want = x;
      (backward ? cpu::rope_backward : cpu::rope_forward)(want.data(), cos.data(), sin.data(), s.B, s.T, s.NH, s.NKV,
                                                           s.hd, host.table());
      DeviceTensor d(dt, x);
      (backward ? cuda::rope_backward : cuda::rope_forward)(dt, d.ptr(), static_cast<float*>(dcos.ptr()),
                                                            static_cast<float*>(dsin.ptr()), s.B, s.T, s.NH, s.NKV,
                                                            s.hd, nullptr, segments.as<TokenSegment>());
      device_sync();
      require_close(dt, d.values(), want, {1e-2});
    }
}
