// RMSNorm and the per-head q/k norms (Qwen3) against kernels/cpu/rmsnorm, fp32 and bf16, vector
// and scalar paths, several row chunks in the weight-gradient sums, input gradients accumulated
// onto a random base; the backward twice gives the same bits.
#include "cuda_test_support.hpp"
#include "kernels/cpu/rmsnorm.hpp"
#include "kernels/cuda/cuda_rmsnorm.hpp"

using namespace zt;
using namespace zt::test;

namespace {

constexpr float kEps = 1e-6f;

struct Shape {
  int N, C;
};

std::vector<Shape> shapes() {
  // C = 64: vector path; C = 37: scalar; N = 600: three row chunks in dweight.
  if (small_shapes()) return {{5, 64}, {9, 37}, {600, 16}};
  return {{5, 64}, {9, 37}, {600, 16}, {8 * 1024, 2048}};  // Llama 3.2 1B's width
}

struct HeadShape {
  int N, NH, NKV, hd;
};

std::vector<HeadShape> head_shapes() {
  // hd 16 and 32: the tiny presets; 24: the Qwen3 fixture; 12: the scalar path; N·NH = 2400 rows:
  // chunks of more than 256 rows, as the partials' capacity grows with N only.
  std::vector<HeadShape> s{{7, 4, 2, 16}, {5, 4, 2, 32}, {6, 4, 2, 24}, {4, 3, 1, 12}, {600, 4, 2, 16}};
  if (!small_shapes()) s.push_back({4 * 1024, 16, 8, 128});  // Qwen3 0.6B's heads
  return s;
}

}  // namespace

TEST_CASE("rmsnorm matches the CPU forward and backward", "[cuda][rmsnorm]") {
  for (float off : {0.0f, 1.0f})  // weight_offset 1: Gemma's (1 + w) norms
  for (DType dt : {DType::F32, DType::BF16})
    for (Shape s : shapes())
      for (size_t pad : {0, 1}) {
        INFO(dtype_name(dt) << " N=" << s.N << " C=" << s.C << " pad=" << pad << " offset=" << off);
        const size_t n = size_t(s.N) * s.C;
        Vec x = random_vec(n, 31, 2.0f);
        for (auto& v : x) v += 1.0f;
        x = rounded(dt, x);
        const Vec w = rounded(dt, random_vec(size_t(s.C), 32));
        Vec out_ref(n), rstd_ref(size_t(s.N));
        cpu::rmsnorm_forward(out_ref.data(), rstd_ref.data(), x.data(), w.data(), s.N, s.C, kEps, off);

        DeviceTensor dx(dt, x, pad), dw(dt, w, pad), y(dt, n, pad);
        DeviceBuffer rstd(size_t(s.N) * 4);
        cuda::rmsnorm_forward(dt, y.ptr(), rstd.as<float>(), dx.ptr(), dw.ptr(), s.N, s.C, kEps, nullptr, off);
        device_sync();
        require_close(dt, y.values(), out_ref, {1e-2});
        require_close(DType::F32, download_raw<float>(rstd, size_t(s.N)), rstd_ref, {0});

        const Vec dy = rounded(dt, random_vec(n, 34));
        const Vec dinp0 = rounded(dt, random_vec(n, 35)), dw0 = rounded(dt, random_vec(size_t(s.C), 36));
        Vec dinp_ref = dinp0, dw_ref = dw0;
        cpu::rmsnorm_backward(dinp_ref.data(), dw_ref.data(), dy.data(), x.data(), w.data(), rstd_ref.data(), s.N, s.C,
                              off);
        DeviceTensor ddy(dt, dy, pad);
        DeviceBuffer scratch(cuda::rmsnorm_backward_scratch_floats(s.N, s.C) * sizeof(float));
        auto backward = [&] {
          DeviceTensor dinp(dt, dinp0, pad), dweight(dt, dw0, pad);
          cuda::rmsnorm_backward(dt, dinp.ptr(), dweight.ptr(), scratch.as<float>(), ddy.ptr(), dx.ptr(), dw.ptr(),
                                 rstd.as<float>(), s.N, s.C, nullptr, GradInto::Accumulate, off);
          device_sync();
          return std::vector<Bytes>{dinp.bits(), dweight.bits()};
        };
        require_close_and_repeatable(dt, backward, {{dinp_ref, {1e-1}}, {dw_ref, {5e-1}}});
      }
}

TEST_CASE("qk_norm matches the CPU forward and backward, v heads copied and passed through", "[cuda][rmsnorm]") {
  for (DType dt : {DType::F32, DType::BF16})
    for (HeadShape s : head_shapes())
      for (size_t pad : {0, 1}) {
        INFO(dtype_name(dt) << " N=" << s.N << " NH=" << s.NH << " NKV=" << s.NKV << " hd=" << s.hd << " pad=" << pad);
        const size_t width = size_t(s.NH + 2 * s.NKV) * s.hd, n = size_t(s.N) * width;
        const size_t stats = size_t(s.N) * (s.NH + s.NKV);
        const Vec x = rounded(dt, random_vec(n, 41, 1.5f));
        const Vec qw = rounded(dt, random_vec(size_t(s.hd), 42)), kw = rounded(dt, random_vec(size_t(s.hd), 43));
        Vec out_ref(n), rstd_ref(stats);
        cpu::qk_norm_forward(out_ref.data(), rstd_ref.data(), x.data(), qw.data(), kw.data(), s.N, s.NH, s.NKV, s.hd,
                             kEps);

        DeviceTensor dx(dt, x, pad), dqw(dt, qw, pad), dkw(dt, kw, pad), y(dt, n, pad);
        DeviceBuffer rstd(stats * 4);
        cuda::qk_norm_forward(dt, y.ptr(), rstd.as<float>(), dx.ptr(), dqw.ptr(), dkw.ptr(), s.N, s.NH, s.NKV, s.hd,
                              kEps, nullptr);
        device_sync();
        require_close(dt, y.values(), out_ref, {1e-2});
        require_close(DType::F32, download_raw<float>(rstd, stats), rstd_ref, {0});
        const Bytes xb = dx.bits(), yb = y.bits();
        const size_t esz = dtype_size(dt), v_at = size_t(s.NH + s.NKV) * s.hd;
        for (int r = 0; r < s.N; r++) {  // the v heads' bits, unchanged
          INFO("row " << r);
          const size_t at = (size_t(r) * width + v_at) * esz, len = size_t(s.NKV) * s.hd * esz;
          REQUIRE(std::memcmp(yb.data() + at, xb.data() + at, len) == 0);
        }

        const Vec dy = rounded(dt, random_vec(n, 44));
        const Vec dinp0 = rounded(dt, random_vec(n, 45));
        const Vec dq0 = rounded(dt, random_vec(size_t(s.hd), 46)), dk0 = rounded(dt, random_vec(size_t(s.hd), 47));
        Vec dinp_ref = dinp0, dq_ref = dq0, dk_ref = dk0;
        cpu::qk_norm_backward(dinp_ref.data(), dq_ref.data(), dk_ref.data(), dy.data(), x.data(), qw.data(), kw.data(),
                              rstd_ref.data(), s.N, s.NH, s.NKV, s.hd);
        DeviceTensor ddy(dt, dy, pad);
        DeviceBuffer scratch(cuda::qk_norm_backward_scratch_floats(s.N, s.hd) * sizeof(float));
        auto backward = [&] {
          DeviceTensor dinp(dt, dinp0, pad), dq(dt, dq0, pad), dk(dt, dk0, pad);
          cuda::qk_norm_backward(dt, dinp.ptr(), dq.ptr(), dk.ptr(), scratch.as<float>(), ddy.ptr(), dx.ptr(),
                                 dqw.ptr(), dkw.ptr(), rstd.as<float>(), s.N, s.NH, s.NKV, s.hd, nullptr);
          device_sync();
          return std::vector<Bytes>{dinp.bits(), dq.bits(), dk.bits()};
        };
        require_close_and_repeatable(dt, backward, {{dinp_ref, {1e-1}}, {dq_ref, {5e-1}}, {dk_ref, {5e-1}}});
      }
}

TEST_CASE("rmsnorm_backward without dweight needs no scratch", "[cuda][rmsnorm]") {
  const Shape s{6, 24};
  const size_t n = size_t(s.N) * s.C;
  const Vec x = random_vec(n, 51), w = random_vec(size_t(s.C), 52), dy = random_vec(n, 53), dinp0 = random_vec(n, 54);
  Vec out(n), rstd(size_t(s.N)), dinp_ref = dinp0;
  cpu::rmsnorm_forward(out.data(), rstd.data(), x.data(), w.data(), s.N, s.C, kEps);
  cpu::rmsnorm_backward(dinp_ref.data(), nullptr, dy.data(), x.data(), w.data(), rstd.data(), s.N, s.C);
  DeviceTensor dx(DType::F32, x), dw(DType::F32, w), ddy(DType::F32, dy), dinp(DType::F32, dinp0);
  DeviceTensor drstd(DType::F32, rstd);
  cuda::rmsnorm_backward(DType::F32, dinp.ptr(), nullptr, nullptr, ddy.ptr(), dx.ptr(), dw.ptr(),
                         static_cast<float*>(drstd.ptr()), s.N, s.C, nullptr);
  device_sync();
  require_close(DType::F32, dinp.values(), dinp_ref, {0});
}

TEST_CASE("rmsnorm and qk_norm reject bad shapes", "[cuda][rmsnorm][errors]") {
  REQUIRE_THROWS_WITH(cuda::rmsnorm_forward(DType::F32, nullptr, nullptr, nullptr, nullptr, 4, 0, kEps, nullptr),
                      Catch::Contains("rmsnorm_forward") && Catch::Contains("width 0"));
  REQUIRE_THROWS_WITH(cuda::qk_norm_forward(DType::BF16, nullptr, nullptr, nullptr, nullptr, nullptr, 4, 0, 1, 16,
                                            kEps, nullptr),
                      Catch::Contains("qk_norm_forward") && Catch::Contains("bad shape"));
  DeviceTensor d(DType::F16, 8);
  REQUIRE_THROWS_WITH(cuda::rmsnorm_forward(DType::F16, d.ptr(), nullptr, d.ptr(), d.ptr(), 1, 8, kEps, nullptr),
                      Catch::Contains("rmsnorm_forward") && Catch::Contains("fp16"));
}
