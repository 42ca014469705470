// SwiGLU against kernels/cpu/swiglu, fp32 and bf16, through the vector path (F % 8 == 0, aligned
// pointers) and the scalar path (pointers one element off, or F not a multiple of 8), gates large
// enough to reach exp's clamp; the backward accumulated onto a random base; twice the same bits.
#include "cuda_test_support.hpp"
#include "kernels/cpu/swiglu.hpp"
#include "kernels/cuda/cuda_swiglu.hpp"

using namespace zt;
using namespace zt::test;

namespace {

struct Shape {
  int N, F;
};

std::vector<Shape> shapes() {
  // F 176 and 192: the tiny presets' d_ff; 13: the scalar path.
  std::vector<Shape> s{{1, 8}, {3, 13}, {5, 176}, {4, 192}};
  if (!small_shapes()) s.push_back({2048, 8192});  // Llama 3.2 1B's d_ff
  return s;
}

}  // namespace

TEST_CASE("swiglu forward and backward match the CPU", "[cuda][swiglu]") {
  for (Gate gate : {Gate::Silu, Gate::GeluTanh})  // SwiGLU and GeGLU
  for (DType dt : {DType::F32, DType::BF16})
    for (Shape s : shapes())
      for (size_t pad : {0, 1}) {
        INFO(dtype_name(dt) << " N=" << s.N << " F=" << s.F << " pad=" << pad << " gelu=" << (gate == Gate::GeluTanh));
        const size_t n = size_t(s.N) * s.F;
        Vec inp = random_vec(2 * n, 71, 3.0f);
        inp[0] = 95.0f;  // exp(-g) clamped
        inp[1] = -95.0f;
        inp = rounded(dt, inp);
        const Vec dy = rounded(dt, random_vec(n, 72));
        const Vec base = rounded(dt, random_vec(2 * n, 73));
        Vec out_ref(n), dinp_ref = base;
        cpu::swiglu_forward(out_ref.data(), inp.data(), s.N, s.F, gate);
        cpu::swiglu_backward(dinp_ref.data(), inp.data(), dy.data(), s.N, s.F, gate);

        DeviceTensor dinp_in(dt, inp, pad), ddy(dt, dy, pad);
        auto run = [&] {
          DeviceTensor out(dt, n, pad), dinp(dt, base, pad);
          cuda::swiglu_forward(dt, out.ptr(), dinp_in.ptr(), s.N, s.F, nullptr, gate);
          cuda::swiglu_backward(dt, dinp.ptr(), dinp_in.ptr(), ddy.ptr(), s.N, s.F, nullptr, GradInto::Accumulate,
                                gate);
          device_sync();
          return std::pair{out.bits(), dinp.bits()};
        };
        const auto got = run();
        require_close(dt, decode(dt, got.first), out_ref, {1e-2});
        require_close(dt, decode(dt, got.second), dinp_ref, {1e-2});
        CHECK(run() == got);
      }
}

TEST_CASE("swiglu rejects a bad shape", "[cuda][swiglu][errors]") {
  REQUIRE_THROWS_WITH(cuda::swiglu_forward(DType::F32, nullptr, nullptr, 4, 0, nullptr),
                      Catch::Contains("swiglu_forward") && Catch::Contains("F = 0"));
}
