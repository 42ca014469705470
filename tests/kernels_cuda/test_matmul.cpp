// The cuBLASLt matmul against kernels/cpu/matmul, both weight layouts, with and without bias, the
// GELU epilogue, the bias fallback for a misaligned bias; the backward accumulates dinp, dweight
// (in the weight's layout) and dbias, and gives the same bits twice. On the CPU build, cuBLASLt is
// cublaslt_stub.cpp: what runs there is the mapping of row-major products onto column-major calls.
// A shape's cuBLASLt objects are made once: later calls with other pointers use them (the
// emulated library counts what is made). bf16 products whose every leading dimension is odd, on
// pointers 2 bytes off 16, match the CPU. ZT_CUBLASLT_EPILOGUES=0 gives the separate calls' bits;
// on the emulator, an epilogue refused (no algorithm, or NOT_SUPPORTED at the call) falls back to
// them.
#include "cuda_test_support.hpp"
#include "kernels/cpu/gelu.hpp"
#include "kernels/cpu/matmul.hpp"
#include "kernels/cuda/cuda_gelu.hpp"
#include "kernels/cuda/cuda_matmul.hpp"

#include <cstdlib>
#include <string>

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
            return std::vector<Bytes>{dinp.bits(), ddw.bits(), ddb.bits()};
          };
          require_close_and_repeatable(dt, backward, {{dinp_ref, {1e-1}}, {dw_ref, {1e-1}}, {db_ref, {1e-1}}});
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
// cuBLASLt calls with a fused epilogue the emulated library has queued (0 on a GPU).
uint64_t cublaslt_epilogue_calls() {
#ifdef ZT_TEST_EMULATED
  return emu::cublaslt_epilogue_calls();
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
      DeviceTensor out(dt, nout), pre(dt, nout), gelu(dt, nout), dinp(dt, nin), dweight(dt, nw),
          dbias(dt, size_t(s.OC));
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

TEST_CASE("bf16 products with odd leading dimensions and pointers 2 bytes off 16 match the CPU", "[cuda][matmul]") {
  // Every leading dimension odd (the rows of inp, W, out and the GELU input start at 2-byte
  // addresses), and each pointer one element past 16-byte alignment: cuBLASLt's narrowest loads,
  // the bias and GELU off their epilogues.
  std::vector<Shape> odd{{9, 13, 11}, {17, 31, 7}, {33, 7, 129}, {5, 1, 3}, {65, 127, 33}};
  if (!small_shapes()) odd.push_back({4097, 767, 3071});
  cuda::MatmulContext ctx;
  const DType dt = DType::BF16;
  for (Shape s : odd)
    for (WeightLayout layout : {WeightLayout::InputMajor, WeightLayout::OutputMajor})
      for (size_t pad : {0, 1}) {
        INFO("N=" << s.N << " C=" << s.C << " OC=" << s.OC << " " << name(layout) << " pad " << pad);
        const size_t nin = size_t(s.N) * s.C, nout = size_t(s.N) * s.OC, nw = size_t(s.C) * s.OC;
        const Vec x = rounded(dt, random_vec(nin, 141)), w = rounded(dt, random_vec(nw, 142, 0.2f));
        const Vec b = rounded(dt, random_vec(size_t(s.OC), 143)), dy = rounded(dt, random_vec(nout, 144));
        Vec pre_ref(nout), out_ref(nout), dinp_ref(nin, 0.0f), dw_ref(nw, 0.0f), db_ref(size_t(s.OC), 0.0f);
        cpu::matmul_forward(pre_ref.data(), x.data(), w.data(), b.data(), s.N, s.C, s.OC, layout);
        cpu::gelu_forward(out_ref.data(), pre_ref.data(), nout);
        cpu::matmul_backward(dinp_ref.data(), dw_ref.data(), db_ref.data(), dy.data(), x.data(), w.data(), s.N, s.C,
                             s.OC, layout);
        DeviceTensor dx(dt, x, pad), dw(dt, w, pad), db(dt, b, pad), ddy(dt, dy, pad);
        auto run = [&] {
          DeviceTensor pre(dt, nout, pad), out(dt, nout, pad), plain(dt, nout, pad);
          DeviceTensor dinp(dt, nin, pad), ddw(dt, nw, pad), ddb(dt, size_t(s.OC), pad);
          cuda::matmul_forward(ctx, dt, plain.ptr(), dx.ptr(), dw.ptr(), db.ptr(), s.N, s.C, s.OC, layout, nullptr);
          cuda::matmul_forward(ctx, dt, out.ptr(), dx.ptr(), dw.ptr(), db.ptr(), s.N, s.C, s.OC, layout, nullptr,
                               pre.ptr());
          cuda::matmul_backward(ctx, dt, dinp.ptr(), ddw.ptr(), ddb.ptr(), ddy.ptr(), dx.ptr(), dw.ptr(), s.N, s.C,
                                s.OC, layout, nullptr, GradInto::Overwrite);
          device_sync();
          return std::vector<Bytes>{plain.bits(), pre.bits(), out.bits(), dinp.bits(), ddw.bits(), ddb.bits()};
        };
        const std::vector<Bytes> got = run();
        const Vec* want[] = {&pre_ref, &pre_ref, &out_ref, &dinp_ref, &dw_ref, &db_ref};
        const char* what[] = {"out", "pre_gelu", "gelu out", "dinp", "dweight", "dbias"};
        for (size_t i = 0; i < got.size(); ++i) {
          INFO(what[i]);
          require_close(dt, decode(dt, got[i]), *want[i], {1e-1});
        }
        CHECK(run() == got);
      }
}

TEST_CASE("ZT_CUBLASLT_EPILOGUES=0 computes every product as a plain GEMM and the separate kernels",
          "[cuda][matmul][gelu]") {
  const char* saved = std::getenv("ZT_CUBLASLT_EPILOGUES");
  const std::string kept = saved ? saved : "";
  setenv("ZT_CUBLASLT_EPILOGUES", "0", 1);
  CHECK_FALSE(cuda::fused_epilogues_from_environment());
  setenv("ZT_CUBLASLT_EPILOGUES", "1", 1);
  CHECK(cuda::fused_epilogues_from_environment());
  setenv("ZT_CUBLASLT_EPILOGUES", "off", 1);
  CHECK_THROWS_WITH(cuda::fused_epilogues_from_environment(),
                    Catch::Contains("ZT_CUBLASLT_EPILOGUES=off") && Catch::Contains("1") && Catch::Contains("0"));
  unsetenv("ZT_CUBLASLT_EPILOGUES");
  CHECK(cuda::fused_epilogues_from_environment());
  if (saved) setenv("ZT_CUBLASLT_EPILOGUES", kept.c_str(), 1);

  // Off, the fused calls give the bits of the separate ones (on a GPU cuBLASLt's GELU differs).
  cuda::MatmulContext ctx(cuda::MatmulContext::kDefaultWorkspaceBytes, false);
  const int N = 9, C = 32, OC = 16;
  const DType dt = DType::BF16;
  const Vec x = rounded(dt, random_vec(size_t(N) * C, 151)), w = rounded(dt, random_vec(size_t(C) * OC, 152, 0.2f));
  const Vec b = rounded(dt, random_vec(size_t(OC), 153)), dy = rounded(dt, random_vec(size_t(N) * OC, 154));
  DeviceTensor dx(dt, x), dw(dt, w), db(dt, b), ddy(dt, dy);
  const uint64_t fused_before = cublaslt_epilogue_calls();
  DeviceTensor out(dt, size_t(N) * OC), pre(dt, size_t(N) * OC), pre2(dt, size_t(N) * OC), out2(dt, size_t(N) * OC);
  cuda::matmul_forward(ctx, dt, out.ptr(), dx.ptr(), dw.ptr(), db.ptr(), N, C, OC, WeightLayout::InputMajor, nullptr,
                       pre.ptr());
  cuda::matmul_forward(ctx, dt, pre2.ptr(), dx.ptr(), dw.ptr(), db.ptr(), N, C, OC, WeightLayout::InputMajor, nullptr);
  cuda::gelu_forward(dt, out2.ptr(), pre2.ptr(), size_t(N) * OC, nullptr);
  // The output projection's backward through that GELU (its input is the GELU's, C = OC here).
  DeviceTensor wt(dt, rounded(dt, random_vec(size_t(OC) * C, 155, 0.2f))),
      dout(dt, rounded(dt, random_vec(size_t(N) * C, 156)));
  DeviceTensor dpre(dt, size_t(N) * OC), scratch(dt, size_t(N) * OC), dw1(dt, size_t(OC) * C), db1(dt, size_t(C));
  DeviceTensor dpre2(dt, size_t(N) * OC), dgelu(dt, size_t(N) * OC), dw2(dt, size_t(OC) * C), db2(dt, size_t(C));
  cuda::matmul_backward_gelu(ctx, dt, dpre.ptr(), scratch.ptr(), dw1.ptr(), db1.ptr(), dout.ptr(), out.ptr(), pre.ptr(),
                             wt.ptr(), N, OC, C, WeightLayout::InputMajor, nullptr, GradInto::Overwrite);
  cuda::matmul_backward(ctx, dt, dgelu.ptr(), dw2.ptr(), db2.ptr(), dout.ptr(), out.ptr(), wt.ptr(), N, OC, C,
                        WeightLayout::InputMajor, nullptr, GradInto::Overwrite);
  cuda::gelu_backward(dt, dpre2.ptr(), pre.ptr(), dgelu.ptr(), size_t(N) * OC, nullptr, GradInto::Overwrite);
  device_sync();
  CHECK(pre.bits() == pre2.bits());
  CHECK(out.bits() == out2.bits());
  CHECK(dpre.bits() == dpre2.bits());
  CHECK(dw1.bits() == dw2.bits());
  CHECK(db1.bits() == db2.bits());
  CHECK(cublaslt_epilogue_calls() == fused_before);
}

#ifdef ZT_TEST_EMULATED
TEST_CASE("an epilogue cuBLASLt refuses falls back to a plain GEMM and the separate kernels", "[cuda][matmul][gelu]") {
  struct Answer {
    ~Answer() { emu::cublaslt_answer_epilogues(emu::EpilogueAnswer::Run); }
  } restore;
  const int N = 9, C = 32, OC = 16;
  for (emu::EpilogueAnswer answer : {emu::EpilogueAnswer::NoAlgorithm, emu::EpilogueAnswer::NotSupported})
    for (DType dt : {DType::F32, DType::BF16}) {
      INFO((answer == emu::EpilogueAnswer::NoAlgorithm ? "no algorithm" : "NOT_SUPPORTED") << " " << dtype_name(dt));
      const Vec x = rounded(dt, random_vec(size_t(N) * C, 161)), w = rounded(dt, random_vec(size_t(C) * OC, 162, 0.2f));
      const Vec b = rounded(dt, random_vec(size_t(OC), 163)), wt = rounded(dt, random_vec(size_t(OC) * C, 164, 0.2f));
      const Vec dout = rounded(dt, random_vec(size_t(N) * C, 165));
      DeviceTensor dx(dt, x), dw(dt, w), db(dt, b), dwt(dt, wt), ddout(dt, dout);
      // The bias, the GELU and its gradient: what a context refused every epilogue computes, and
      // what one that never asks for them computes.
      auto run = [&](cuda::MatmulContext& ctx) {
        DeviceTensor biased(dt, size_t(N) * OC), out(dt, size_t(N) * OC), pre(dt, size_t(N) * OC);
        DeviceTensor dpre(dt, size_t(N) * OC), scratch(dt, size_t(N) * OC), ddw(dt, size_t(OC) * C), ddb(dt, size_t(C));
        cuda::matmul_forward(ctx, dt, biased.ptr(), dx.ptr(), dw.ptr(), db.ptr(), N, C, OC, WeightLayout::InputMajor,
                             nullptr);
        cuda::matmul_forward(ctx, dt, out.ptr(), dx.ptr(), dw.ptr(), db.ptr(), N, C, OC, WeightLayout::InputMajor,
                             nullptr, pre.ptr());
        cuda::matmul_backward_gelu(ctx, dt, dpre.ptr(), scratch.ptr(), ddw.ptr(), ddb.ptr(), ddout.ptr(), out.ptr(),
                                   pre.ptr(), dwt.ptr(), N, OC, C, WeightLayout::InputMajor, nullptr,
                                   GradInto::Overwrite);
        device_sync();
        return std::vector<Bytes>{biased.bits(), out.bits(), pre.bits(), dpre.bits(), ddw.bits(), ddb.bits()};
      };
      cuda::MatmulContext plain(cuda::MatmulContext::kDefaultWorkspaceBytes, false);
      const std::vector<Bytes> want = run(plain);
      emu::cublaslt_answer_epilogues(answer);
      const uint64_t fused_before = emu::cublaslt_epilogue_calls();
      cuda::MatmulContext refused;
      CHECK(run(refused) == want);
      CHECK(run(refused) == want);  // the shape's plan keeps the refusal
      CHECK(emu::cublaslt_epilogue_calls() == fused_before);
      emu::cublaslt_answer_epilogues(emu::EpilogueAnswer::Run);
    }
}
#endif
