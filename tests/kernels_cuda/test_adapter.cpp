// LoRA's elementwise operators (kernels/cuda/cuda_adapter.hpp) against kernels/cpu/adapter_ops:
// a scaled column block written over and added onto a slice of a wider matrix (the rest of each
// row untouched), and dropout's hashed mask, the same elements dropped as on the CPU, forward
// written over and backward accumulated; fp32 and bf16; twice the same bits.
#include "cuda_test_support.hpp"
#include "kernels/cpu/adapter_ops.hpp"
#include "kernels/cuda/cuda_adapter.hpp"

using namespace zt;
using namespace zt::test;

TEST_CASE("scale_columns writes and adds a column block of a packed matrix as the CPU does", "[cuda][adapter]") {
  struct Shape {
    int N, width, dst_ld, src_ld, column;
  };
  for (DType dt : {DType::F32, DType::BF16})
    for (Shape s : {Shape{3, 5, 12, 5, 4}, Shape{7, 16, 48, 16, 32}, Shape{2, 8, 8, 24, 0}})
      for (GradInto into : {GradInto::Overwrite, GradInto::Accumulate}) {
        INFO(dtype_name(dt) << " N=" << s.N << " width=" << s.width << " column=" << s.column);
        const Vec src = rounded(dt, random_vec(size_t(s.N) * s.src_ld, 41));
        const Vec base = rounded(dt, random_vec(size_t(s.N) * s.dst_ld, 42));
        Vec ref = base;
        cpu::scale_columns(ref.data() + s.column, s.dst_ld, src.data(), s.src_ld, s.N, s.width, 1.75f,
                           into == GradInto::Accumulate);
        DeviceTensor dsrc(dt, src, 0);
        auto run = [&] {
          DeviceTensor dst(dt, base, 0);
          cuda::scale_columns(dt, static_cast<char*>(dst.ptr()) + size_t(s.column) * dtype_size(dt), s.dst_ld,
                              dsrc.ptr(), s.src_ld, s.N, s.width, 1.75f, into, nullptr);
          device_sync();
          return dst.bits();
        };
        const auto got = run();
        require_close(dt, decode(dt, got), ref, {1e-2});
        CHECK(run() == got);
      }
}

TEST_CASE("dropout drops the elements the CPU drops, forward and backward", "[cuda][adapter]") {
  for (DType dt : {DType::F32, DType::BF16})
    for (float p : {0.1f, 0.5f}) {
      INFO(dtype_name(dt) << " p=" << p);
      const size_t n = 3001;
      const Vec inp = rounded(dt, random_vec(n, 51));
      const Vec base = rounded(dt, random_vec(n, 52));
      Vec out_ref(n), acc_ref = base;
      cpu::dropout(out_ref.data(), inp.data(), n, p, 1234, false);
      cpu::dropout(acc_ref.data(), inp.data(), n, p, 1234, true);
      size_t dropped = 0;
      for (size_t i = 0; i < n; ++i) dropped += out_ref[i] == 0.0f;
      CHECK(double(dropped) / n == Approx(p).margin(0.04));
      DeviceTensor din(dt, inp, 0);
      auto run = [&] {
        DeviceTensor out(dt, n, 0), acc(dt, base, 0);
        cuda::dropout(dt, out.ptr(), din.ptr(), n, p, 1234, GradInto::Overwrite, nullptr);
        cuda::dropout(dt, acc.ptr(), din.ptr(), n, p, 1234, GradInto::Accumulate, nullptr);
        device_sync();
        return std::pair{out.bits(), acc.bits()};
      };
      const auto got = run();
      const Vec out = decode(dt, got.first);
      for (size_t i = 0; i < n; ++i) CHECK((out[i] == 0.0f) == (out_ref[i] == 0.0f));
      require_close(dt, out, out_ref, {1e-2});
      require_close(dt, decode(dt, got.second), acc_ref, {1e-2});
      CHECK(run() == got);
    }
}
