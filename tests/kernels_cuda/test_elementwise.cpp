// GELU and the residual connection against kernels/cpu, in fp32 and bf16, through the vector
// path (16-byte aligned pointers) and the scalar path (pointers one element off), for sizes that
// do and do not fill the last 8-element group; GELU twice gives the same bits (the residual's
// fp32 results are the CPU's bits).
#include "cuda_test_support.hpp"
#include "kernels/cpu/gelu.hpp"
#include "kernels/cpu/residual.hpp"
#include "kernels/cuda/cuda_gelu.hpp"
#include "kernels/cuda/cuda_residual.hpp"

using namespace zt;
using namespace zt::test;

namespace {

const std::vector<size_t> kSizes =
    small_shapes() ? std::vector<size_t>{1, 13, 2048 + 5} : std::vector<size_t>{1, 13, 1 << 20};

}  // namespace

TEST_CASE("gelu_forward and gelu_backward match the CPU", "[cuda][gelu]") {
  for (DType dt : {DType::F32, DType::BF16})
    for (size_t n : kSizes)
      for (size_t pad : {0, 1}) {
        INFO(dtype_name(dt) << " n=" << n << " pad=" << pad);
        const Vec x = rounded(dt, random_vec(n, 11, 3.0f));
        const Vec dy = rounded(dt, random_vec(n, 12));
        const Vec base = rounded(dt, random_vec(n, 13));
        Vec y_ref(n), dx_ref = base;
        cpu::gelu_forward(y_ref.data(), x.data(), n);
        cpu::gelu_backward(dx_ref.data(), x.data(), dy.data(), n);

        DeviceTensor dx(dt, x, pad), ddy(dt, dy, pad), dy_out(dt, n, pad), ddx(dt, base, pad);
        cuda::gelu_forward(dt, dy_out.ptr(), dx.ptr(), n, nullptr);
        cuda::gelu_backward(dt, ddx.ptr(), dx.ptr(), ddy.ptr(), n, nullptr);
        device_sync();
        require_close(dt, dy_out.values(), y_ref, {1e-2});
        require_close(dt, ddx.values(), dx_ref, {1e-2});

        DeviceTensor y2(dt, n, pad), dx2(dt, base, pad);
        cuda::gelu_forward(dt, y2.ptr(), dx.ptr(), n, nullptr);
        cuda::gelu_backward(dt, dx2.ptr(), dx.ptr(), ddy.ptr(), n, nullptr);
        device_sync();
        CHECK(y2.bits() == dy_out.bits());
        CHECK(dx2.bits() == ddx.bits());
      }
}

TEST_CASE("gelu_forward runs in place", "[cuda][gelu]") {
  const Vec x = random_vec(1000, 14, 2.0f);
  Vec y_ref(x.size());
  cpu::gelu_forward(y_ref.data(), x.data(), x.size());
  DeviceTensor d(DType::F32, x);
  cuda::gelu_forward(DType::F32, d.ptr(), d.ptr(), x.size(), nullptr);
  device_sync();
  require_close(DType::F32, d.values(), y_ref, {0});
}

TEST_CASE("residual_forward and residual_backward match the CPU", "[cuda][residual]") {
  for (DType dt : {DType::F32, DType::BF16})
    for (size_t n : kSizes)
      for (size_t pad : {0, 1}) {
        INFO(dtype_name(dt) << " n=" << n << " pad=" << pad);
        const Vec a = rounded(dt, random_vec(n, 21)), b = rounded(dt, random_vec(n, 22));
        const Vec dout = rounded(dt, random_vec(n, 23));
        const Vec da0 = rounded(dt, random_vec(n, 24)), db0 = rounded(dt, random_vec(n, 25));
        Vec out_ref(n), da_ref = da0, db_ref = db0;
        cpu::residual_forward(out_ref.data(), a.data(), b.data(), n);
        cpu::residual_backward(da_ref.data(), db_ref.data(), dout.data(), n);

        DeviceTensor da(dt, a, pad), db(dt, b, pad), dd(dt, dout, pad), dout_out(dt, n, pad);
        DeviceTensor dda(dt, da0, pad), ddb(dt, db0, pad);
        cuda::residual_forward(dt, dout_out.ptr(), da.ptr(), db.ptr(), n, nullptr);
        cuda::residual_backward(dt, dda.ptr(), ddb.ptr(), dd.ptr(), n, nullptr);
        device_sync();
        if (dt == DType::F32) {  // one fp32 addition per element: the CPU's bits
          CHECK(dout_out.values() == out_ref);
          CHECK(dda.values() == da_ref);
          CHECK(ddb.values() == db_ref);
        } else {
          require_close(dt, dout_out.values(), out_ref, {1e-2});
          require_close(dt, dda.values(), da_ref, {1e-2});
          require_close(dt, ddb.values(), db_ref, {1e-2});
        }
      }
}

TEST_CASE("residual_backward skips a null gradient", "[cuda][residual]") {
  const Vec dout = random_vec(100, 26), db0 = random_vec(100, 27);
  DeviceTensor dd(DType::F32, dout), ddb(DType::F32, db0);
  cuda::residual_backward(DType::F32, nullptr, ddb.ptr(), dd.ptr(), dout.size(), nullptr);
  device_sync();
  Vec want = db0;
  for (size_t i = 0; i < want.size(); i++) want[i] += dout[i];
  CHECK(ddb.values() == want);
}

TEST_CASE("model operators refuse fp16 activations", "[cuda][errors]") {
  DeviceTensor d(DType::F16, 8);
  REQUIRE_THROWS_WITH(cuda::gelu_forward(DType::F16, d.ptr(), d.ptr(), 8, nullptr),
                      Catch::Contains("gelu_forward") && Catch::Contains("fp16"));
}
