// LayerNorm forward and backward against kernels/cpu/layernorm, fp32 and bf16, vector and scalar
// paths, several row chunks in the weight-gradient sums; the backward twice gives the same bits.
#include "cuda_test_support.hpp"
#include "kernels/cpu/layernorm.hpp"
#include "kernels/cuda/cuda_layernorm.hpp"

using namespace zt;
using namespace zt::test;

namespace {

struct Shape {
  int N, C;
};

std::vector<Shape> shapes() {
  // C = 40: vector path; C = 37: scalar; N = 300: two row chunks in dweight/dbias.
  if (small_shapes()) return {{5, 40}, {9, 37}, {300, 16}};
  return {{5, 40}, {9, 37}, {300, 16}, {8 * 1024, 768}};
}

// dinp, dweight and dbias's bits.
std::vector<Bytes> run_backward(DType dt, const Vec& dinp0, const Vec& dw0, const Vec& db0, const DeviceTensor& dout,
                                const DeviceTensor& inp, const DeviceTensor& weight, const DeviceBuffer& mean,
                                const DeviceBuffer& rstd, Shape s, size_t pad) {
  DeviceTensor dinp(dt, dinp0, pad), dw(dt, dw0, pad), db(dt, db0, pad);
  DeviceBuffer scratch(cuda::layernorm_backward_scratch_floats(s.N, s.C) * sizeof(float));
  cuda::layernorm_backward(dt, dinp.ptr(), dw.ptr(), db.ptr(), scratch.as<float>(), dout.ptr(), inp.ptr(),
                           weight.ptr(), mean.as<float>(), rstd.as<float>(), s.N, s.C, nullptr);
  device_sync();
  return {dinp.bits(), dw.bits(), db.bits()};
}

}  // namespace

TEST_CASE("layernorm matches the CPU forward and backward", "[cuda][layernorm]") {
  for_dtype_shape_pad(shapes(), [&](DType dt, Shape s, size_t pad) {
    INFO(dtype_name(dt) << " N=" << s.N << " C=" << s.C << " pad=" << pad);
    const size_t n = size_t(s.N) * s.C;
    Vec x = random_vec(n, 31, 2.0f);
    for (auto& v : x) v += 3.0f;  // a mean far from 0: the variance takes a second pass
    x = rounded(dt, x);
    const Vec w = rounded(dt, random_vec(size_t(s.C), 32)), b = rounded(dt, random_vec(size_t(s.C), 33));
    Vec out_ref(n), mean_ref(size_t(s.N)), rstd_ref(size_t(s.N));
    cpu::layernorm_forward(out_ref.data(), mean_ref.data(), rstd_ref.data(), x.data(), w.data(), b.data(), s.N,
                           s.C);

    DeviceTensor dx(dt, x, pad), dw(dt, w, pad), dbias(dt, b, pad), dout_y(dt, n, pad);
    DeviceBuffer mean(size_t(s.N) * 4), rstd(size_t(s.N) * 4);
    cuda::layernorm_forward(dt, dout_y.ptr(), mean.as<float>(), rstd.as<float>(), dx.ptr(), dw.ptr(),
                            dbias.ptr(), s.N, s.C, nullptr);
    device_sync();
    require_close(dt, dout_y.values(), out_ref, {1e-2});
    require_close(DType::F32, download_raw<float>(mean, size_t(s.N)), mean_ref, {0});
    require_close(DType::F32, download_raw<float>(rstd, size_t(s.N)), rstd_ref, {0});

    const Vec dy = rounded(dt, random_vec(n, 34));
    const Vec dinp0 = rounded(dt, random_vec(n, 35)), dw0 = rounded(dt, random_vec(size_t(s.C), 36));
    const Vec db0 = rounded(dt, random_vec(size_t(s.C), 37));
    Vec dinp_ref = dinp0, dw_ref = dw0, db_ref = db0;
    cpu::layernorm_backward(dinp_ref.data(), dw_ref.data(), db_ref.data(), dy.data(), x.data(), w.data(),
                            mean_ref.data(), rstd_ref.data(), s.N, s.C);
    DeviceTensor ddy(dt, dy, pad);
    require_close_and_repeatable(dt, [&] { return run_backward(dt, dinp0, dw0, db0, ddy, dx, dw, mean, rstd, s, pad); },
                                 {{dinp_ref, {1e-1}}, {dw_ref, {5e-1}}, {db_ref, {5e-1}}});
  });
}

TEST_CASE("layernorm_backward without dweight and dbias needs no scratch", "[cuda][layernorm]") {
  const Shape s{6, 24};
  const size_t n = size_t(s.N) * s.C;
  const Vec x = random_vec(n, 41), w = random_vec(size_t(s.C), 42), b = random_vec(size_t(s.C), 43);
  const Vec dy = random_vec(n, 44), dinp0 = random_vec(n, 45);
  Vec out(n), mean(size_t(s.N)), rstd(size_t(s.N)), dinp_ref = dinp0;
  cpu::layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), s.N, s.C);
  cpu::layernorm_backward(dinp_ref.data(), nullptr, nullptr, dy.data(), x.data(), w.data(), mean.data(), rstd.data(),
                          s.N, s.C);
  DeviceTensor dx(DType::F32, x), dw(DType::F32, w), ddy(DType::F32, dy), dinp(DType::F32, dinp0);
  DeviceTensor dmean(DType::F32, mean), drstd(DType::F32, rstd);
  cuda::layernorm_backward(DType::F32, dinp.ptr(), nullptr, nullptr, nullptr, ddy.ptr(), dx.ptr(), dw.ptr(),
                           static_cast<float*>(dmean.ptr()), static_cast<float*>(drstd.ptr()), s.N, s.C, nullptr);
  device_sync();
  require_close(DType::F32, dinp.values(), dinp_ref, {0});
}

TEST_CASE("layernorm rejects a bad shape", "[cuda][layernorm][errors]") {
  REQUIRE_THROWS_WITH(cuda::layernorm_forward(DType::F32, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 4, 0,
                                              nullptr),
                      Catch::Contains("layernorm_forward") && Catch::Contains("C = 0"));
}
