// The cuBLASLt matmul against kernels/cpu/matmul, both weight layouts, with and without bias, the
// GELU epilogue, the bias fallback for a misaligned bias; the backward accumulates dinp, dweight
// (in the weight's layout) and dbias, and gives the same bits twice. On the CPU build, cuBLASLt is
// cublaslt_stub.cpp: what runs there is the mapping of row-major products onto column-major calls.
// A shape's cuBLASLt objects are made once: later calls with other pointers use them (the
// emulated library counts what is made).
#include "cuda_test_support.hpp"
#include "kernels/cpu/gelu.hpp"
#include "kernels/cpu/matmul.hpp"
#include "kernels/cuda/cuda_matmul.hpp"

#ifdef ZT_TEST_EMULATED
#include "emulated_device.hpp"
#endif

using namespace zt;
using namespace zt::test;
using cpu::WeightLayout;

namespace {

struct Shape {
  int N, C, OC;
};

std::vector<Shape> shapes() {
  std::vector<Shape> s{{7, 16, 24}, {33, 40, 20}, {5, 13, 11}, {300, 8, 16}};
  if (!small_shapes()) {
    s.push_back({8 * 1024, 768, 3072});  // GPT-2's MLP input projection
    s.push_back({1024, 768, 50304});     // the LM head
  }
  return s;
}

const char* name(WeightLayout l) { return l == WeightLayout::InputMajor ? "InputMajor" : "OutputMajor"; }

struct Grads {
  Bytes dinp, dweight, dbias;
};

}  // namespace

TEST_CASE("matmul forward and backward match the CPU", "[cuda][matmul]") {
  cuda::MatmulContext ctx;
  for (DType dt : {DType::F32, DType::BF16})
    for (Shape s : shapes())
      for (WeightLayout layout : {WeightLayout::InputMajor, WeightLayout::OutputMajor})
        for (bool with_bias : {true, false}) {
          INFO(dtype_name(dt) << " N=" << s.N << " C=" << s.C << " OC=" << s.OC << " " << name(layout)
                              << (with_bias ? " bias" : " no bias"));
          const size_t nin = size_t(s.N) * s.C, nout = size_t(s.N) * s.OC, nw = size_t(s.C) * s.OC;
          const Vec x = rounded(dt, random_vec(nin, 101)), w = rounded(dt, random_vec(nw, 102, 0.1f));
          const Vec b = rounded(dt, random_vec(size_t(s.OC), 103));
          Vec out_ref(nout);
          cpu::matmul_forward(out_ref.data(), x.data(), w.data(), with_bias ? b.data() : nullptr, s.N, s.C, s.OC,
                              layout);
          DeviceTensor dx(dt, x), dw(dt, w), db(dt, b), out(dt, random_vec(nout, 104));  // forward overwrites
          cuda::matmul_forward(ctx, dt, out.ptr(), dx.ptr(), dw.ptr(), with_bias ? db.ptr() : nullptr, s.N, s.C, s.OC,
                               layout, nullptr);
          device_sync();
          require_close(dt, out.values(), out_ref, {1e-1});

          const Vec dy = rounded(dt, random_vec(nout, 105));
          // fp32 accumulates onto random gradients; bf16 onto zeros (see test_attention.cpp)
          auto base = [&](size_t n, uint64_t seed) { return dt == DType::F32 ? random_vec(n, seed) : Vec(n, 0.0f); };
          const Vec dinp0 = base(nin, 106), dw0 = base(nw, 107), db0 = base(size_t(s.OC), 108);
          Vec dinp_ref = dinp0, dw_ref = dw0, db_ref = db0;
          cpu::matmul_backward(dinp_ref.data(), dw_ref.data(), with_bias ? db_ref.data() : nullptr, dy.data(), x.data(),
                               w.data(), s.N, s.C, s.OC, layout);
          DeviceTensor ddy(dt, dy);
          auto backward = [&] {
            DeviceTensor dinp(dt, dinp0), ddw(dt, dw0), ddb(dt, db0);
            cuda::matmul_backward(ctx, dt, dinp.ptr(), ddw.ptr(), with_bias ? ddb.ptr() : nullptr, ddy.ptr(),
                                  dx.ptr(), dw.ptr(), s.N, s.C, s.OC, layout, nullptr);
            device_sync();
            return Grads{dinp.bits(), ddw.bits(), ddb.bits()};
          };
          const Grads got = backward();
          require_close(dt, decode(dt, got.dinp), dinp_ref, {1e-1});
          require_close(dt, decode(dt, got.dweight), dw_ref, {1e-1});
          require_close(dt, decode(dt, got.dbias), db_ref, {1e-1});
          const Grads again = backward();
          CHECK(again.dinp == got.dinp);
          CHECK(again.dweight == got.dweight);
          CHECK(again.dbias == got.dbias);
        }
}

TEST_CASE("matmul with pre_gelu writes the GELU input and output", "[cuda][matmul][gelu]") {
  cuda::MatmulContext ctx;
  const Shape s = small_shapes() ? Shape{9, 16, 32} : Shape{4096, 768, 3072};
  for (DType dt : {DType::F32, DType::BF16})
    for (bool with_bias : {true, false}) {
      INFO(dtype_name(dt) << (with_bias ? " bias" : " no bias"));
      const size_t nout = size_t(s.N) * s.OC;
      const Vec x = rounded(dt, random_vec(size_t(s.N) * s.C, 111));
      const Vec w = rounded(dt, random_vec(size_t(s.C) * s.OC, 112, 0.2f));
      const Vec b = rounded(dt, random_vec(size_t(s.OC), 113));
      Vec pre_ref(nout), out_ref(nout);
      cpu::matmul_forward(pre_ref.data(), x.data(), w.data(), with_bias ? b.data() : nullptr, s.N, s.C, s.OC);
      cpu::gelu_forward(out_ref.data(), pre_ref.data(), nout);
      DeviceTensor dx(dt, x), dw(dt, w), db(dt, b), out(dt, nout), pre(dt, nout);
      cuda::matmul_forward(ctx, dt, out.ptr(), dx.ptr(), dw.ptr(), with_bias ? db.ptr() : nullptr, s.N, s.C, s.OC,
                           WeightLayout::InputMajor, nullptr, pre.ptr());
      device_sync();
      require_close(dt, pre.values(), pre_ref, {1e-1});
      // bf16: cuBLASLt's own GELU, to bf16 precision; fp32: the CPU's formula
      require_close(dt, out.values(), out_ref, {1e-1});
    }
}

TEST_CASE("matmul adds a misaligned bias correctly", "[cuda][matmul]") {
  cuda::MatmulContext ctx;
  const Shape s{6, 16, 24};
  for (DType dt : {DType::F32, DType::BF16}) {
    INFO(dtype_name(dt));
    const Vec x = rounded(dt, random_vec(size_t(s.N) * s.C, 121)), w = rounded(dt, random_vec(size_t(s.C) * s.OC, 122));
    const Vec b = rounded(dt, random_vec(size_t(s.OC), 123));
    Vec out_ref(size_t(s.N) * s.OC);
    cpu::matmul_forward(out_ref.data(), x.data(), w.data(), b.data(), s.N, s.C, s.OC);
    DeviceTensor dx(dt, x), dw(dt, w), db(dt, b, 1), out(dt, out_ref.size());  // bias one element off 16 bytes
    cuda::matmul_forward(ctx, dt, out.ptr(), dx.ptr(), dw.ptr(), db.ptr(), s.N, s.C, s.OC, WeightLayout::InputMajor,
                         nullptr);
    device_sync();
    require_close(dt, out.values(), out_ref, {1e-1});
  }
}

TEST_CASE("matmul rejects fp16 and bad shapes", "[cuda][matmul][errors]") {
  cuda::MatmulContext ctx;
  REQUIRE_THROWS_WITH(cuda::matmul_forward(ctx, DType::F16, nullptr, nullptr, nullptr, nullptr, 4, 8, 8,
                                           WeightLayout::InputMajor, nullptr),
                      Catch::Contains("matmul_forward") && Catch::Contains("fp16"));
  REQUIRE_THROWS_WITH(cuda::matmul_backward(ctx, DType::F32, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 4, 0,
                                            8, WeightLayout::InputMajor, nullptr),
                      Catch::Contains("matmul_backward") && Catch::Contains("C = 0"));
}

namespace {
// cuBLASLt objects the emulated library has made (0 on a GPU, where nothing counts them).
uint64_t cublaslt_creations() {
#ifdef ZT_TEST_EMULATED
  return emu::cublaslt_creations();
#else
  return 0;
#endif
}
}  // namespace

TEST_CASE("matmul makes a shape's cuBLASLt objects once and runs them on the pointers of each call",
          "[cuda][matmul]") {
  cuda::MatmulContext ctx;
  const Shape s{8, 16, 32};
  for (DType dt : {DType::F32, DType::BF16}) {
    INFO(dtype_name(dt));
    const size_t nin = size_t(s.N) * s.C, nout = size_t(s.N) * s.OC, nw = size_t(s.C) * s.OC;
    // Two sets of inputs of the same shape and alignment: the second call must read its own.
    const Vec x1 = rounded(dt, random_vec(nin, 131)), w1 = rounded(dt, random_vec(nw, 132, 0.2f));
    const Vec b1 = rounded(dt, random_vec(size_t(s.OC), 133));
    const Vec x2 = rounded(dt, random_vec(nin, 134)), w2 = rounded(dt, random_vec(nw, 135, 0.2f));
    const Vec b2 = rounded(dt, random_vec(size_t(s.OC), 136)), dy = rounded(dt, random_vec(nout, 137));
    DeviceTensor dx1(dt, x1), dw1(dt, w1), db1(dt, b1), dx2(dt, x2), dw2(dt, w2), db2(dt, b2), ddy(dt, dy);
    auto one_step = [&](const DeviceTensor& x, const DeviceTensor& w, const DeviceTensor& b) {
      DeviceTensor out(dt, nout), pre(dt, nout), gelu(dt, nout), dinp(dt, nin), dweight(dt, nw), dbias(dt, size_t(s.OC));
      cuda::matmul_forward(ctx, dt, out.ptr(), x.ptr(), w.ptr(), b.ptr(), s.N, s.C, s.OC, WeightLayout::InputMajor,
                           nullptr);
      cuda::matmul_forward(ctx, dt, gelu.ptr(), x.ptr(), w.ptr(), b.ptr(), s.N, s.C, s.OC, WeightLayout::InputMajor,
                           nullptr, pre.ptr());
      cuda::matmul_backward(ctx, dt, dinp.ptr(), dweight.ptr(), dbias.ptr(), ddy.ptr(), x.ptr(), w.ptr(), s.N, s.C,
                            s.OC, WeightLayout::InputMajor, nullptr, GradInto::Overwrite);
      device_sync();
      return std::vector<Vec>{out.values(), pre.values(), gelu.values(), dinp.values(), dweight.values()};
    };
    auto reference = [&](const Vec& x, const Vec& w, const Vec& b) {
      Vec out(nout), gelu(nout), dinp(nin, 0.0f), dweight(nw, 0.0f);
      cpu::matmul_forward(out.data(), x.data(), w.data(), b.data(), s.N, s.C, s.OC);
      cpu::gelu_forward(gelu.data(), out.data(), nout);
      cpu::matmul_backward(dinp.data(), dweight.data(), nullptr, dy.data(), x.data(), w.data(), s.N, s.C, s.OC);
      return std::vector<Vec>{out, out, gelu, dinp, dweight};
    };
    const std::vector<Vec> first = one_step(dx1, dw1, db1);
    const uint64_t made = cublaslt_creations();
    const std::vector<Vec> second = one_step(dx2, dw2, db2);
    CHECK(cublaslt_creations() == made);
    const std::vector<Vec> want1 = reference(x1, w1, b1), want2 = reference(x2, w2, b2);
    for (size_t i = 0; i < first.size(); ++i) {
      INFO("output " << i);
      require_close(dt, first[i], want1[i], {1e-1});
      require_close(dt, second[i], want2[i], {1e-1});
    }
  }
}
