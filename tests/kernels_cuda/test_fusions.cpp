// What the model's operator table fuses or writes over on the GPU gives what the unfused,
// accumulating calls give: a residual and its LayerNorm or RMSNorm in one pass against the two calls
// (bit for bit); every input gradient written over a buffer of NaNs (GradInto::Overwrite) against the same
// gradient accumulated onto zeros (bit for bit); the MLP's output projection's backward through the
// GELU against matmul_backward then gelu_backward (bit for bit in fp32, within bf16's tolerance
// where the GELU's gradient runs in cuBLASLt's epilogue).
#include "cuda_test_support.hpp"
#include "kernels/cuda/cuda_attention.hpp"
#include "kernels/cuda/cuda_gelu.hpp"
#include "kernels/cuda/cuda_layernorm.hpp"
#include "kernels/cuda/cuda_matmul.hpp"
#include "kernels/cuda/cuda_residual.hpp"
#include "kernels/cuda/cuda_rmsnorm.hpp"
#include "kernels/cuda/cuda_swiglu.hpp"

#include <limits>

using namespace zt;
using namespace zt::test;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// A gradient buffer of n elements: zeros (to accumulate onto) or NaNs (to be written over).
DeviceTensor grad_buffer(DType dt, size_t n, GradInto into) {
  return DeviceTensor(dt, Vec(n, into == GradInto::Accumulate ? 0.0f : kNaN));
}

}  // namespace

TEST_CASE("residual + layernorm in one pass gives the two calls' bits", "[cuda][layernorm][fusion][smoke]") {
  for (DType dt : {DType::F32, DType::BF16})
    for (int C : {40, 37}) {  // the vector and the scalar path
      INFO(dtype_name(dt) << " C=" << C);
      const int N = 9;
      const size_t n = size_t(N) * C;
      DeviceTensor a(dt, rounded(dt, random_vec(n, 1))), b(dt, rounded(dt, random_vec(n, 2)));
      DeviceTensor w(dt, rounded(dt, random_vec(size_t(C), 3))), bias(dt, rounded(dt, random_vec(size_t(C), 4)));
      DeviceTensor res1(dt, n), out1(dt, n), res2(dt, n), out2(dt, n);
      DeviceBuffer mean1(N * 4), rstd1(N * 4), mean2(N * 4), rstd2(N * 4);
      cuda::residual_forward(dt, res1.ptr(), a.ptr(), b.ptr(), n, nullptr);
      cuda::layernorm_forward(dt, out1.ptr(), mean1.as<float>(), rstd1.as<float>(), res1.ptr(), w.ptr(), bias.ptr(), N,
                              C, nullptr);
      cuda::residual_layernorm_forward(dt, res2.ptr(), out2.ptr(), mean2.as<float>(), rstd2.as<float>(), a.ptr(),
                                       b.ptr(), w.ptr(), bias.ptr(), N, C, nullptr);
      device_sync();
      CHECK(res2.bits() == res1.bits());
      CHECK(out2.bits() == out1.bits());
      CHECK(mean2.download_bytes() == mean1.download_bytes());
      CHECK(rstd2.download_bytes() == rstd1.download_bytes());
    }
}

TEST_CASE("residual + rmsnorm in one pass gives the two calls' bits", "[cuda][rmsnorm][fusion]") {
  for (DType dt : {DType::F32, DType::BF16})
    for (int C : {64, 37}) {  // the vector and the scalar path
      INFO(dtype_name(dt) << " C=" << C);
      const int N = 9;
      const size_t n = size_t(N) * C;
      DeviceTensor a(dt, rounded(dt, random_vec(n, 5))), b(dt, rounded(dt, random_vec(n, 6)));
      DeviceTensor w(dt, rounded(dt, random_vec(size_t(C), 7)));
      DeviceTensor res1(dt, n), out1(dt, n), res2(dt, n), out2(dt, n);
      DeviceBuffer rstd1(N * 4), rstd2(N * 4);
      cuda::residual_forward(dt, res1.ptr(), a.ptr(), b.ptr(), n, nullptr);
      cuda::rmsnorm_forward(dt, out1.ptr(), rstd1.as<float>(), res1.ptr(), w.ptr(), N, C, 1e-5f, nullptr);
      cuda::residual_rmsnorm_forward(dt, res2.ptr(), out2.ptr(), rstd2.as<float>(), a.ptr(), b.ptr(), w.ptr(), N, C,
                                     1e-5f, nullptr);
      device_sync();
      CHECK(res2.bits() == res1.bits());
      CHECK(out2.bits() == out1.bits());
      CHECK(rstd2.download_bytes() == rstd1.download_bytes());
    }
}

TEST_CASE("input gradients written over NaNs equal those accumulated onto zeros", "[cuda][fusion]") {
  for (DType dt : {DType::F32, DType::BF16}) {
    INFO(dtype_name(dt));
    auto run = [&](GradInto into) {
      std::vector<Bytes> got;
      {  // matmul: dinp
        const int N = 7, C = 16, OC = 24;
        DeviceTensor x(dt, rounded(dt, random_vec(size_t(N) * C, 11))),
            w(dt, rounded(dt, random_vec(size_t(C) * OC, 12)));
        DeviceTensor dy(dt, rounded(dt, random_vec(size_t(N) * OC, 13)));
        DeviceTensor dx = grad_buffer(dt, size_t(N) * C, into);
        cuda::MatmulContext ctx;
        cuda::matmul_backward(ctx, dt, dx.ptr(), nullptr, nullptr, dy.ptr(), x.ptr(), w.ptr(), N, C, OC,
                              cpu::WeightLayout::InputMajor, nullptr, into);
        device_sync();
        got.push_back(dx.bits());
      }
      {  // gelu
        const size_t n = 1001;
        DeviceTensor x(dt, rounded(dt, random_vec(n, 21))), dy(dt, rounded(dt, random_vec(n, 22)));
        DeviceTensor dx = grad_buffer(dt, n, into);
        cuda::gelu_backward(dt, dx.ptr(), x.ptr(), dy.ptr(), n, nullptr, into);
        device_sync();
        got.push_back(dx.bits());
      }
      {  // layernorm: dinp
        const int N = 5, C = 40;
        const size_t n = size_t(N) * C;
        DeviceTensor x(dt, rounded(dt, random_vec(n, 31))), dy(dt, rounded(dt, random_vec(n, 32)));
        DeviceTensor w(dt, rounded(dt, random_vec(size_t(C), 33))), b(dt, Vec(size_t(C), 0.0f)), y(dt, n);
        DeviceBuffer mean(N * 4), rstd(N * 4);
        cuda::layernorm_forward(dt, y.ptr(), mean.as<float>(), rstd.as<float>(), x.ptr(), w.ptr(), b.ptr(), N, C,
                                nullptr);
        DeviceTensor dx = grad_buffer(dt, n, into);
        cuda::layernorm_backward(dt, dx.ptr(), nullptr, nullptr, nullptr, dy.ptr(), x.ptr(), w.ptr(), mean.as<float>(),
                                 rstd.as<float>(), N, C, nullptr, into);
        device_sync();
        got.push_back(dx.bits());
      }
      {  // attention: dqkv (both kernels of each dtype's path, grouped-query)
        const cuda::AttentionShape s{2, 70, 4, 2, 16};
        const size_t rows = size_t(s.B) * s.T, width = size_t(s.NH + 2 * s.NKV) * s.hs;
        DeviceTensor qkv(dt, rounded(dt, random_vec(rows * width, 41))), out(dt, rows * s.NH * s.hs);
        DeviceTensor dy(dt, rounded(dt, random_vec(rows * s.NH * s.hs, 42)));
        DeviceBuffer lse(rows * s.NH * 4), scratch(cuda::attention_backward_scratch_floats(s.B, s.T, s.NH) * 4);
        cuda::attention_forward(dt, out.ptr(), lse.as<float>(), qkv.ptr(), s, nullptr);
        DeviceTensor dqkv = grad_buffer(dt, rows * width, into);
        cuda::attention_backward(dt, dqkv.ptr(), scratch.as<float>(), dy.ptr(), qkv.ptr(), out.ptr(), lse.as<float>(),
                                 s, nullptr, into);
        device_sync();
        got.push_back(dqkv.bits());
      }
      {  // rmsnorm: dinp
        const int N = 5, C = 40;
        const size_t n = size_t(N) * C;
        DeviceTensor x(dt, rounded(dt, random_vec(n, 51))), dy(dt, rounded(dt, random_vec(n, 52)));
        DeviceTensor w(dt, rounded(dt, random_vec(size_t(C), 53))), y(dt, n);
        DeviceBuffer rstd(N * 4);
        cuda::rmsnorm_forward(dt, y.ptr(), rstd.as<float>(), x.ptr(), w.ptr(), N, C, 1e-5f, nullptr);
        DeviceTensor dx = grad_buffer(dt, n, into);
        cuda::rmsnorm_backward(dt, dx.ptr(), nullptr, nullptr, dy.ptr(), x.ptr(), w.ptr(), rstd.as<float>(), N, C,
                               nullptr, into);
        device_sync();
        got.push_back(dx.bits());
      }
      {  // q/k norms: dqkv (the v heads passed through)
        const int N = 6, NH = 4, NKV = 2, hd = 16;
        const size_t n = size_t(N) * (NH + 2 * NKV) * hd;
        DeviceTensor x(dt, rounded(dt, random_vec(n, 61))), dy(dt, rounded(dt, random_vec(n, 62))), y(dt, n);
        DeviceTensor qw(dt, rounded(dt, random_vec(size_t(hd), 63))), kw(dt, rounded(dt, random_vec(size_t(hd), 64)));
        DeviceBuffer rstd(size_t(N) * (NH + NKV) * 4);
        cuda::qk_norm_forward(dt, y.ptr(), rstd.as<float>(), x.ptr(), qw.ptr(), kw.ptr(), N, NH, NKV, hd, 1e-6f,
                              nullptr);
        DeviceTensor dx = grad_buffer(dt, n, into);
        cuda::qk_norm_backward(dt, dx.ptr(), nullptr, nullptr, nullptr, dy.ptr(), x.ptr(), qw.ptr(), kw.ptr(),
                               rstd.as<float>(), N, NH, NKV, hd, nullptr, into);
        device_sync();
        got.push_back(dx.bits());
      }
      {  // swiglu: d gate and d up
        const int N = 3, F = 40;
        DeviceTensor x(dt, rounded(dt, random_vec(size_t(N) * 2 * F, 71)));
        DeviceTensor dy(dt, rounded(dt, random_vec(size_t(N) * F, 72)));
        DeviceTensor dx = grad_buffer(dt, size_t(N) * 2 * F, into);
        cuda::swiglu_backward(dt, dx.ptr(), x.ptr(), dy.ptr(), N, F, nullptr, into);
        device_sync();
        got.push_back(dx.bits());
      }
      return got;
    };
    const auto accumulated = run(GradInto::Accumulate), written = run(GradInto::Overwrite);
    const char* names[] = {"matmul dinp", "gelu dinp", "layernorm dinp", "attention dqkv", "rmsnorm dinp",
                           "qk_norm dqkv", "swiglu dinp"};
    for (size_t i = 0; i < accumulated.size(); i++) {
      INFO(names[i]);
      CHECK(written[i] == accumulated[i]);
    }
  }
}

TEST_CASE("the output projection's backward through the GELU equals the two calls", "[cuda][matmul][gelu][fusion]") {
  const int N = 9, C = 32, OC = 16;  // C: the GELU's width (the projection's input)
  for (DType dt : {DType::F32, DType::BF16}) {
    INFO(dtype_name(dt));
    const Vec pre = rounded(dt, random_vec(size_t(N) * C, 51)), w = rounded(dt, random_vec(size_t(C) * OC, 52, 0.2f));
    const Vec dy = rounded(dt, random_vec(size_t(N) * OC, 53));
    DeviceTensor dpre_v(dt, pre), gelu_out(dt, size_t(N) * C), dw(dt, w), ddy(dt, dy);
    cuda::gelu_forward(dt, gelu_out.ptr(), dpre_v.ptr(), size_t(N) * C, nullptr);
    cuda::MatmulContext ctx;
    DeviceTensor dgelu(dt, size_t(N) * C), dpre1(dt, size_t(N) * C), dw1(dt, size_t(C) * OC), db1(dt, size_t(OC));
    cuda::matmul_backward(ctx, dt, dgelu.ptr(), dw1.ptr(), db1.ptr(), ddy.ptr(), gelu_out.ptr(), dw.ptr(), N, C, OC,
                          cpu::WeightLayout::InputMajor, nullptr, GradInto::Overwrite);
    cuda::gelu_backward(dt, dpre1.ptr(), dpre_v.ptr(), dgelu.ptr(), size_t(N) * C, nullptr, GradInto::Overwrite);
    DeviceTensor scratch = grad_buffer(dt, size_t(N) * C, GradInto::Overwrite),
                 dpre2 = grad_buffer(dt, size_t(N) * C, GradInto::Overwrite);
    DeviceTensor dw2(dt, size_t(C) * OC), db2(dt, size_t(OC));
    cuda::matmul_backward_gelu(ctx, dt, dpre2.ptr(), scratch.ptr(), dw2.ptr(), db2.ptr(), ddy.ptr(), gelu_out.ptr(),
                               dpre_v.ptr(), dw.ptr(), N, C, OC, cpu::WeightLayout::InputMajor, nullptr,
                               GradInto::Overwrite);
    device_sync();
    CHECK(dw2.bits() == dw1.bits());
    CHECK(db2.bits() == db1.bits());
    if (dt == DType::F32) CHECK(dpre2.bits() == dpre1.bits());
    else require_close(dt, dpre2.values(), dpre1.values(), {2e-2});
  }
}
