// What the model's operator table fuses or writes over on the GPU gives what the unfused,
// accumulating calls give, bit for bit: a residual and its LayerNorm in one pass against the two
// calls; every input gradient written over a buffer of NaNs (GradInto::Overwrite) against the same
// gradient accumulated onto zeros.
#include "cuda_test_support.hpp"
#include "kernels/cuda/attention.hpp"
#include "kernels/cuda/gelu.hpp"
#include "kernels/cuda/layernorm.hpp"
#include "kernels/cuda/matmul.hpp"
#include "kernels/cuda/residual.hpp"

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

TEST_CASE("residual + layernorm in one pass gives the two calls' bits", "[cuda][layernorm][fusion]") {
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

TEST_CASE("input gradients written over NaNs equal those accumulated onto zeros", "[cuda][fusion]") {
  for (DType dt : {DType::F32, DType::BF16}) {
    INFO(dtype_name(dt));
    auto run = [&](GradInto into) {
      std::vector<Bytes> got;
      {  // matmul: dinp
        const int N = 7, C = 16, OC = 24;
        DeviceTensor x(dt, rounded(dt, random_vec(size_t(N) * C, 11))), w(dt, rounded(dt, random_vec(size_t(C) * OC, 12)));
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
      return got;
    };
    const auto accumulated = run(GradInto::Accumulate), written = run(GradInto::Overwrite);
    const char* names[] = {"matmul dinp", "gelu dinp", "layernorm dinp", "attention dqkv"};
    for (size_t i = 0; i < accumulated.size(); i++) {
      INFO(names[i]);
      CHECK(written[i] == accumulated[i]);
    }
  }
}
