// Token + position embedding against kernels/cpu/embedding. The backward adds each token's rows
// in position order onto dwte, as the CPU loop does, so fp32 gradients equal the CPU's bit for
// bit; a frequent token (a long run of equal keys) and tokens outside the vocabulary included;
// packed rows, whose positions restart with each sample.
#include <cmath>

#include "core/rng.hpp"
#include "cuda_test_support.hpp"
#include "packed_rows.hpp"
#include "kernels/cpu/embedding.hpp"
#include "kernels/cuda/cuda_embedding.hpp"

using namespace zt;
using namespace zt::test;

namespace {

struct Shape {
  int B, T, C, V;
};

std::vector<Shape> shapes() {
  // V = 7: every token repeats; C = 13: scalar path.
  if (small_shapes()) return {{2, 5, 16, 7}, {3, 4, 13, 50}, {2, 64, 24, 3}};
  return {{2, 5, 16, 7}, {3, 4, 13, 50}, {2, 64, 24, 3}, {8, 1024, 768, 50257}};
}

std::vector<int32_t> random_tokens(size_t n, int V, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> t(n);
  for (auto& x : t) x = rng.below(4) == 0 ? 0 : int32_t(rng.below(uint64_t(V)));  // token 0 is frequent
  return t;
}

struct Backward {
  Bytes dwte, dwpe;
};

Backward run_backward(DType dt, const Vec& dwte0, const Vec& dwpe0, const DeviceTensor& dout,
                      const DeviceBuffer& tokens, Shape s, size_t pad) {
  DeviceTensor dwte(dt, dwte0, pad), dwpe(dt, dwpe0, pad);
  DeviceBuffer workspace(cuda::embedding_backward_workspace_bytes(s.B, s.T));
  cuda::embedding_backward(dt, dwte.ptr(), dwpe.ptr(), workspace.get(), workspace.bytes(), dout.ptr(),
                           tokens.as<int32_t>(), s.B, s.T, s.C, s.V, nullptr);
  device_sync();
  return {dwte.bits(), dwpe.bits()};
}

}  // namespace

TEST_CASE("embedding forward and backward match the CPU", "[cuda][embedding]") {
  for (DType dt : {DType::F32, DType::BF16})
    for (Shape s : shapes())
      for (size_t pad : {0, 1}) {
        INFO(dtype_name(dt) << " B=" << s.B << " T=" << s.T << " C=" << s.C << " V=" << s.V << " pad=" << pad);
        const size_t N = size_t(s.B) * s.T;
        const auto tokens = random_tokens(N, s.V, 61);
        const Vec wte = rounded(dt, random_vec(size_t(s.V) * s.C, 62));
        const Vec wpe = rounded(dt, random_vec(size_t(s.T) * s.C, 63));
        Vec out_ref(N * s.C);
        cpu::embedding_forward(out_ref.data(), tokens.data(), wte.data(), wpe.data(), s.B, s.T, s.C);

        DeviceBuffer dtokens = upload_raw(tokens);
        DeviceTensor dwte_in(dt, wte, pad), dwpe_in(dt, wpe, pad), out(dt, N * s.C, pad);
        cuda::embedding_forward(dt, out.ptr(), dtokens.as<int32_t>(), dwte_in.ptr(), dwpe_in.ptr(), s.B, s.T, s.C, s.V,
                                nullptr);
        device_sync();
        if (dt == DType::F32)
          CHECK(out.values() == out_ref);
        else
          require_close(dt, out.values(), out_ref, {1e-2});

        const Vec dy = rounded(dt, random_vec(N * s.C, 64));
        const Vec dwte0 = rounded(dt, random_vec(wte.size(), 65)), dwpe0 = rounded(dt, random_vec(wpe.size(), 66));
        Vec dwte_ref = dwte0, dwpe_ref = dwpe0;
        cpu::embedding_backward(dwte_ref.data(), dwpe_ref.data(), dy.data(), tokens.data(), s.B, s.T, s.C);
        DeviceTensor ddy(dt, dy, pad);
        const Backward got = run_backward(dt, dwte0, dwpe0, ddy, dtokens, s, pad);
        if (dt == DType::F32) {
          CHECK(decode(dt, got.dwte) == dwte_ref);
          CHECK(decode(dt, got.dwpe) == dwpe_ref);
        } else {
          require_close(dt, decode(dt, got.dwte), dwte_ref, {1e-2});
          require_close(dt, decode(dt, got.dwpe), dwpe_ref, {1e-2});
        }
        const Backward again = run_backward(dt, dwte0, dwpe0, ddy, dtokens, s, pad);
        CHECK(again.dwte == got.dwte);
        CHECK(again.dwpe == got.dwpe);
      }
}

TEST_CASE("embedding: a token outside the vocabulary gives a NaN row and no gradient", "[cuda][embedding]") {
  const Shape s{1, 4, 8, 5};
  const std::vector<int32_t> tokens{1, -1, 5, 1};  // -1 and 5 are outside [0, 5)
  const Vec wte = random_vec(size_t(s.V) * s.C, 67), wpe = random_vec(size_t(s.T) * s.C, 68);
  const Vec dy = random_vec(size_t(s.T) * s.C, 69);
  DeviceBuffer dtokens = upload_raw(tokens);
  DeviceTensor dwte(DType::F32, wte), dwpe(DType::F32, wpe), out(DType::F32, size_t(s.T) * s.C);
  cuda::embedding_forward(DType::F32, out.ptr(), dtokens.as<int32_t>(), dwte.ptr(), dwpe.ptr(), s.B, s.T, s.C, s.V,
                          nullptr);
  DeviceTensor grad(DType::F32, Vec(wte.size(), 0.0f)), ddy(DType::F32, dy);
  DeviceBuffer workspace(cuda::embedding_backward_workspace_bytes(s.B, s.T));
  cuda::embedding_backward(DType::F32, grad.ptr(), nullptr, workspace.get(), workspace.bytes(), ddy.ptr(),
                           dtokens.as<int32_t>(), s.B, s.T, s.C, s.V, nullptr);
  device_sync();
  const Vec y = out.values(), g = grad.values();
  for (int t = 0; t < s.T; t++) {
    const bool valid = tokens[size_t(t)] >= 0 && tokens[size_t(t)] < s.V;
    for (int c = 0; c < s.C; c++) CHECK(std::isnan(y[size_t(t) * s.C + c]) == !valid);
  }
  for (int v = 0; v < s.V; v++)
    for (int c = 0; c < s.C; c++) {
      const float want = v == 1 ? dy[size_t(c)] + dy[size_t(3) * s.C + c] : 0.0f;
      CHECK(g[size_t(v) * s.C + c] == want);
    }
}

TEST_CASE("packed rows: learned positions restart with each sample as on the CPU", "[cuda][embedding][packed]") {
  const PackedRows p{3, 9, {{0, 2, 7}, {0}, {0, 4, 5}}};
  const Shape s{p.B, p.T, 16, 7};
  const size_t N = size_t(s.B) * s.T;
  const RowSegments host = p.segments();
  const DeviceBuffer segments = upload_raw(std::vector<TokenSegment>(host.table(), host.table() + N));
  const auto tokens = random_tokens(N, s.V, 71);
  DeviceBuffer dtokens = upload_raw(tokens);
  for (DType dt : {DType::F32, DType::BF16}) {
    INFO(dtype_name(dt));
    const Vec wte = rounded(dt, random_vec(size_t(s.V) * s.C, 72));
    const Vec wpe = rounded(dt, random_vec(size_t(s.T) * s.C, 73));
    const Vec dy = rounded(dt, random_vec(N * s.C, 74)), dwpe0 = rounded(dt, random_vec(wpe.size(), 75));
    Vec out_ref(N * s.C), dwpe_ref = dwpe0;
    cpu::embedding_forward(out_ref.data(), tokens.data(), wte.data(), wpe.data(), s.B, s.T, s.C, host.table());
    cpu::embedding_backward(nullptr, dwpe_ref.data(), dy.data(), tokens.data(), s.B, s.T, s.C, host.table());

    DeviceTensor dwte_in(dt, wte), dwpe_in(dt, wpe), out(dt, N * s.C), ddy(dt, dy), dwpe(dt, dwpe0);
    cuda::embedding_forward(dt, out.ptr(), dtokens.as<int32_t>(), dwte_in.ptr(), dwpe_in.ptr(), s.B, s.T, s.C, s.V,
                            nullptr, segments.as<TokenSegment>());
    cuda::embedding_backward(dt, nullptr, dwpe.ptr(), nullptr, 0, ddy.ptr(), dtokens.as<int32_t>(), s.B, s.T, s.C,
                             s.V, nullptr, segments.as<TokenSegment>());
    device_sync();
    if (dt == DType::F32) {  // the same additions in the same order
      CHECK(out.values() == out_ref);
      CHECK(dwpe.values() == dwpe_ref);
    } else {
      require_close(dt, out.values(), out_ref, {1e-2});
      require_close(dt, dwpe.values(), dwpe_ref, {1e-2});
    }
  }
}
