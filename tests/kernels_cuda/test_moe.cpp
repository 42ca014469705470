// The mixture-of-experts operators against kernels/cpu/moe, fp32 and bf16: the router (the same
// experts chosen, ties to the lower index; probabilities and weights in fp32 whatever the dtype),
// with and without renormalisation and the load-balancing gradient; the gather bit for bit; the
// combination, the scatter onto a base and over it, and the gated shared expert, through the
// vector path (C % 8 == 0, aligned) and the scalar one (pointers one element off, C odd); twice the
// same bits.
#include <algorithm>

#include "cuda_test_support.hpp"
#include "kernels/cpu/moe.hpp"
#include "kernels/cpu/matmul.hpp"
#include "kernels/cuda/cuda_moe.hpp"
#include "kernels/cuda/cuda_moe_gemm.hpp"

using namespace zt;
using namespace zt::test;

namespace {

struct Shape {
  int N, E, K, C;
};

std::vector<Shape> shapes() {
  // C 13: the scalar path; 8 experts top-2 and 4 top-1: the fixtures'; 64 with K 8: Qwen3-MoE's top-k.
  std::vector<Shape> s{{1, 4, 1, 8}, {7, 8, 2, 13}, {33, 16, 4, 64}, {20, 64, 8, 40}};
  if (!small_shapes()) s.push_back({4096, 128, 8, 2048});  // Qwen3-30B-A3B's router
  return s;
}

// The rows of each expert side by side (model/moe_block.cpp's grouping): token [R], row [N·K].
struct Grouping {
  std::vector<int32_t> token, row;
};
Grouping group(const std::vector<int32_t>& experts, int E, int K) {
  std::vector<size_t> next(size_t(E) + 1, 0);
  for (int32_t e : experts) next[size_t(e) + 1]++;
  for (int e = 0; e < E; ++e) next[size_t(e) + 1] += next[size_t(e)];
  Grouping g{std::vector<int32_t>(experts.size()), std::vector<int32_t>(experts.size())};
  for (size_t i = 0; i < experts.size(); ++i) {
    const size_t r = next[size_t(experts[i])]++;
    g.token[r] = int32_t(i / size_t(K));
    g.row[i] = int32_t(r);
  }
  return g;
}

}  // namespace

TEST_CASE("moe routing matches the CPU forward and backward, in fp32 whatever the dtype", "[cuda][moe]") {
  for (DType dt : {DType::F32, DType::BF16})
    for (Shape s : shapes())
      for (bool normalize : {false, true})
        for (bool aux : {false, true}) {
          INFO(dtype_name(dt) << " N=" << s.N << " E=" << s.E << " K=" << s.K << " normalize=" << normalize
                              << " aux=" << aux);
          const size_t NE = size_t(s.N) * s.E, NK = size_t(s.N) * s.K;
          Vec logits = random_vec(NE, 81, 2.0f);
          std::fill_n(logits.begin(), std::min<size_t>(size_t(s.E), 3), 5.0f);  // ties: the lower index wins
          logits = rounded(dt, logits);
          Vec probs_ref(NE), weights_ref(NK);
          std::vector<int32_t> experts_ref(NK);
          cpu::moe_route(probs_ref.data(), experts_ref.data(), weights_ref.data(), logits.data(), s.N, s.E, s.K,
                         normalize);
          const Vec dweights = random_vec(NK, 82), daux = random_vec(size_t(s.E), 83, 0.1f);
          Vec dlogits_ref(NE);
          cpu::moe_route_backward(dlogits_ref.data(), dweights.data(), probs_ref.data(), experts_ref.data(),
                                  aux ? daux.data() : nullptr, s.N, s.E, s.K, normalize);

          DeviceTensor dlogits_in(dt, logits);
          DeviceBuffer ddweights = upload_raw(dweights), ddaux = upload_raw(daux);
          auto run = [&] {
            DeviceBuffer probs(NE * 4), weights(NK * 4), experts(NK * 4);
            DeviceTensor dlogits(dt, NE);
            cuda::moe_route(dt, probs.as<float>(), experts.as<int32_t>(), weights.as<float>(), dlogits_in.ptr(), s.N,
                            s.E, s.K, normalize, nullptr);
            cuda::moe_route_backward(dt, dlogits.ptr(), ddweights.as<float>(), probs.as<float>(),
                                     experts.as<int32_t>(), aux ? ddaux.as<float>() : nullptr, s.N, s.E, s.K,
                                     normalize, nullptr);
            device_sync();
            return std::tuple{download_raw<float>(probs, NE), download_raw<int32_t>(experts, NK),
                              download_raw<float>(weights, NK), dlogits.bits()};
          };
          const auto got = run();
          CHECK(std::get<1>(got) == experts_ref);
          if (s.K < s.E) CHECK(std::get<1>(got)[0] == 0);  // of the three tied at the top, the first
          // fp32 whatever the dtype: only exp's last bits differ.
          require_close(DType::F32, std::get<0>(got), probs_ref, {0});
          require_close(DType::F32, std::get<2>(got), weights_ref, {0});
          require_close(dt, decode(dt, std::get<3>(got)), dlogits_ref, {1e-2});
          CHECK(run() == got);
        }
}

TEST_CASE("moe gather, combine and scatter match the CPU forward and backward", "[cuda][moe]") {
  for_dtype_shape_pad(shapes(), [&](DType dt, Shape s, size_t pad) {
    INFO(dtype_name(dt) << " N=" << s.N << " E=" << s.E << " K=" << s.K << " C=" << s.C << " pad=" << pad);
    const size_t NK = size_t(s.N) * s.K, NC = size_t(s.N) * s.C, RC = NK * s.C;
    Vec probs(size_t(s.N) * s.E), weights(NK);
    std::vector<int32_t> experts(NK);
    cpu::moe_route(probs.data(), experts.data(), weights.data(), random_vec(probs.size(), 91).data(), s.N, s.E,
                   s.K, true);
    const Grouping g = group(experts, s.E, s.K);
    const Vec x = rounded(dt, random_vec(NC, 92)), y = rounded(dt, random_vec(RC, 93));
    const Vec dout = rounded(dt, random_vec(NC, 94)), drows = rounded(dt, random_vec(RC, 95));
    const Vec base = rounded(dt, random_vec(NC, 96));
    Vec rows_ref(RC), out_ref(NC), dy_ref(RC), dweights_ref(NK), dx_ref = base, dx_over_ref(NC);
    cpu::moe_gather(rows_ref.data(), x.data(), g.token.data(), int(NK), s.C);
    cpu::moe_combine(out_ref.data(), y.data(), weights.data(), g.row.data(), s.N, s.K, s.C);
    cpu::moe_combine_backward(dy_ref.data(), dweights_ref.data(), dout.data(), y.data(), weights.data(),
                              g.row.data(), s.N, s.K, s.C);
    cpu::moe_scatter(dx_ref.data(), drows.data(), g.row.data(), s.N, s.K, s.C, true);
    cpu::moe_scatter(dx_over_ref.data(), drows.data(), g.row.data(), s.N, s.K, s.C, false);

    DeviceTensor dx_in(dt, x, pad), dy_in(dt, y, pad), ddout(dt, dout, pad), ddrows(dt, drows, pad);
    DeviceBuffer dweights_in = upload_raw(weights), token = upload_raw(g.token), row = upload_raw(g.row);
    auto run = [&] {
      DeviceTensor rows(dt, RC, pad), out(dt, NC, pad), dy(dt, RC, pad), dx(dt, base, pad);
      DeviceTensor dx_over(dt, random_vec(NC, 97), pad);  // written over: its contents ignored
      DeviceBuffer dweights(NK * 4);
      cuda::moe_gather(dt, rows.ptr(), dx_in.ptr(), token.as<int32_t>(), int(NK), s.C, nullptr);
      cuda::moe_combine(dt, out.ptr(), dy_in.ptr(), dweights_in.as<float>(), row.as<int32_t>(), s.N, s.K, s.C,
                        nullptr);
      cuda::moe_combine_backward(dt, dy.ptr(), dweights.as<float>(), ddout.ptr(), dy_in.ptr(),
                                 dweights_in.as<float>(), row.as<int32_t>(), s.N, s.K, s.C, nullptr);
      cuda::moe_scatter(dt, dx.ptr(), ddrows.ptr(), row.as<int32_t>(), s.N, s.K, s.C, GradInto::Accumulate,
                        nullptr);
      cuda::moe_scatter(dt, dx_over.ptr(), ddrows.ptr(), row.as<int32_t>(), s.N, s.K, s.C, GradInto::Overwrite,
                        nullptr);
      device_sync();
      return std::tuple{rows.bits(), out.bits(), dy.bits(), download_raw<float>(dweights, NK), dx.bits(),
                        dx_over.bits()};
    };
    const auto got = run();
    CHECK(decode(dt, std::get<0>(got)) == rows_ref);  // a copy: the same bits
    require_close(dt, decode(dt, std::get<1>(got)), out_ref, {1e-2});
    require_close(dt, decode(dt, std::get<2>(got)), dy_ref, {1e-2});
    require_close(DType::F32, std::get<3>(got), dweights_ref, {0});  // fp32 sums of the same products
    require_close(dt, decode(dt, std::get<4>(got)), dx_ref, {1e-2});
    require_close(dt, decode(dt, std::get<5>(got)), dx_over_ref, {1e-2});
    CHECK(run() == got);
  });
}

TEST_CASE("the gated shared expert matches the CPU forward and backward", "[cuda][moe]") {
  for_dtype_shape_pad(shapes(), [&](DType dt, Shape s, size_t pad) {
    INFO(dtype_name(dt) << " N=" << s.N << " C=" << s.C << " pad=" << pad);
    const size_t NC = size_t(s.N) * s.C;
    const Vec y = rounded(dt, random_vec(NC, 101)), gate = rounded(dt, random_vec(size_t(s.N), 102, 3.0f));
    const Vec base = rounded(dt, random_vec(NC, 103)), dout = rounded(dt, random_vec(NC, 104));
    Vec out_ref = base, dy_ref(NC), dgate_ref(size_t(s.N));
    cpu::moe_gate_add(out_ref.data(), y.data(), gate.data(), s.N, s.C);
    cpu::moe_gate_add_backward(dy_ref.data(), dgate_ref.data(), dout.data(), y.data(), gate.data(), s.N, s.C);
    DeviceTensor dy_in(dt, y, pad), dgate_in(dt, gate, pad), ddout(dt, dout, pad);
    auto run = [&] {
      DeviceTensor out(dt, base, pad), dy(dt, random_vec(NC, 105), pad), dgate(dt, size_t(s.N), pad);
      cuda::moe_gate_add(dt, out.ptr(), dy_in.ptr(), dgate_in.ptr(), s.N, s.C, nullptr);
      cuda::moe_gate_add_backward(dt, dy.ptr(), dgate.ptr(), ddout.ptr(), dy_in.ptr(), dgate_in.ptr(), s.N, s.C,
                                  nullptr);
      device_sync();
      return std::tuple{out.bits(), dy.bits(), dgate.bits()};
    };
    const auto got = run();
    require_close(dt, decode(dt, std::get<0>(got)), out_ref, {1e-2});
    require_close(dt, decode(dt, std::get<1>(got)), dy_ref, {1e-2});
    require_close(dt, decode(dt, std::get<2>(got)), dgate_ref, {1e-2});
    CHECK(run() == got);
  });
}

TEST_CASE("moe operators reject a bad shape", "[cuda][moe][errors]") {
  REQUIRE_THROWS_WITH(cuda::moe_route(DType::F32, nullptr, nullptr, nullptr, nullptr, 4, 2, 3, true, nullptr),
                      Catch::Contains("moe_route") && Catch::Contains("K = 3"));
  REQUIRE_THROWS_WITH(cuda::moe_gather(DType::F32, nullptr, nullptr, nullptr, 4, 0, nullptr),
                      Catch::Contains("moe_gather") && Catch::Contains("C = 0"));
}

namespace {

// Routing patterns for the grouped GEMM: random picks (some experts get few or no tokens), or every
// token to experts 1 and 3 (two experts with all the tokens, the others none).
enum class Routing { Random, Skewed };

struct GemmShape {
  int N, E, K, C, OC;
  Routing routing;
};

std::vector<int32_t> route(const GemmShape& s, uint64_t seed) {
  std::vector<int32_t> experts(size_t(s.N) * s.K);
  if (s.routing == Routing::Skewed) {
    for (int n = 0; n < s.N; ++n)
      for (int j = 0; j < s.K; ++j) experts[size_t(n) * s.K + j] = 1 + 2 * j;
    return experts;
  }
  Vec probs(size_t(s.N) * s.E), weights(experts.size());
  cpu::moe_route(probs.data(), experts.data(), weights.data(), random_vec(probs.size(), seed, 3.0f).data(), s.N, s.E,
                 s.K, false);
  return experts;
}

}  // namespace

TEST_CASE("moe_group lays the routed rows out expert by expert on the device", "[cuda][moe]") {
  for (GemmShape s : {GemmShape{37, 8, 2, 8, 8, Routing::Random}, GemmShape{70, 4, 2, 8, 8, Routing::Skewed},
                      GemmShape{300, 16, 4, 8, 8, Routing::Random}, GemmShape{5, 4, 1, 8, 8, Routing::Skewed}}) {
    INFO("N=" << s.N << " E=" << s.E << " K=" << s.K);
    const std::vector<int32_t> experts = route(s, 111);
    const Grouping want = group(experts, s.E, s.K);
    std::vector<int32_t> offsets_want(size_t(s.E) + 1, 0);
    for (int32_t e : experts) offsets_want[size_t(e) + 1]++;
    for (int e = 0; e < s.E; ++e) offsets_want[size_t(e) + 1] += offsets_want[size_t(e)];
    if (s.routing == Routing::Skewed) CHECK(offsets_want[2] - offsets_want[1] == s.N);  // all the tokens
    DeviceBuffer dexperts = upload_raw(experts);
    auto run = [&] {
      DeviceBuffer offsets((size_t(s.E) + 1) * 4), token(experts.size() * 4), row(experts.size() * 4);
      cuda::moe_group(offsets.as<int32_t>(), token.as<int32_t>(), row.as<int32_t>(), dexperts.as<int32_t>(), s.N,
                      s.E, s.K, nullptr);
      device_sync();
      return std::tuple{download_raw<int32_t>(offsets, size_t(s.E) + 1), download_raw<int32_t>(token, experts.size()),
                        download_raw<int32_t>(row, experts.size())};
    };
    const auto got = run();
    CHECK(std::get<0>(got) == offsets_want);
    CHECK(std::get<1>(got) == want.token);
    CHECK(std::get<2>(got) == want.row);
  }
}

TEST_CASE("the grouped expert GEMMs match one GEMM per expert, forward and backward", "[cuda][moe]") {
  // Experts with no rows, experts with every token, tiles cut at the rows', columns' and k's ends
  // (64-row and 64-column tiles, 32-wide k slices), experts' weights apart by more than their size.
  const std::vector<GemmShape> shapes{{37, 8, 2, 40, 24, Routing::Random}, {70, 4, 2, 33, 72, Routing::Skewed},
                                      {9, 16, 1, 16, 8, Routing::Random}};
  for (DType dt : {DType::F32, DType::BF16})
    for (GemmShape s : shapes) {
      INFO(dtype_name(dt) << " N=" << s.N << " E=" << s.E << " K=" << s.K << " C=" << s.C << " OC=" << s.OC);
      const std::vector<int32_t> experts = route(s, 121);
      std::vector<int32_t> offsets(size_t(s.E) + 1, 0);
      for (int32_t e : experts) offsets[size_t(e) + 1]++;
      for (int e = 0; e < s.E; ++e) offsets[size_t(e) + 1] += offsets[size_t(e)];
      const int R = s.N * s.K;
      const size_t stride = size_t(s.OC) * s.C + 5, RC = size_t(R) * s.C, RO = size_t(R) * s.OC;
      const Vec in = rounded(dt, random_vec(RC, 122)), w = rounded(dt, random_vec(stride * s.E, 123, 0.3f));
      const Vec dout = rounded(dt, random_vec(RO, 124)), dw_base = rounded(dt, random_vec(stride * s.E, 125));
      const Vec dinp_base = rounded(dt, random_vec(RC, 126));
      // The reference: one CPU GEMM per expert over its rows.
      Vec out_ref(RO), dinp_ref(RC, 0.0f), dinp_acc_ref = dinp_base, dw_ref = dw_base;
      for (int e = 0; e < s.E; ++e) {
        const int first = offsets[size_t(e)], n = offsets[size_t(e) + 1] - first;
        if (n == 0) continue;
        const float* we = w.data() + size_t(e) * stride;
        cpu::matmul_forward(out_ref.data() + size_t(first) * s.OC, in.data() + size_t(first) * s.C, we, nullptr, n,
                            s.C, s.OC, WeightLayout::OutputMajor);
        cpu::matmul_backward(dinp_ref.data() + size_t(first) * s.C, dw_ref.data() + size_t(e) * stride, nullptr,
                             dout.data() + size_t(first) * s.OC, in.data() + size_t(first) * s.C, we, n, s.C, s.OC,
                             WeightLayout::OutputMajor);
        cpu::matmul_backward(dinp_acc_ref.data() + size_t(first) * s.C, nullptr, nullptr,
                             dout.data() + size_t(first) * s.OC, in.data() + size_t(first) * s.C, we, n, s.C, s.OC,
                             WeightLayout::OutputMajor);
      }
      DeviceTensor din(dt, in), dwt(dt, w), ddout(dt, dout);
      DeviceBuffer dexperts = upload_raw(experts);
      auto run = [&] {
        // The offsets as the routing leaves them on the device: never read back.
        DeviceBuffer doffsets((size_t(s.E) + 1) * 4), token(size_t(R) * 4), row(size_t(R) * 4);
        cuda::moe_group(doffsets.as<int32_t>(), token.as<int32_t>(), row.as<int32_t>(), dexperts.as<int32_t>(), s.N,
                        s.E, s.K, nullptr);
        DeviceTensor out(dt, random_vec(RO, 127)), dinp(dt, random_vec(RC, 128)), dinp_acc(dt, dinp_base);
        DeviceTensor dw(dt, dw_base);
        const int32_t* off = doffsets.as<int32_t>();
        cuda::moe_expert_forward(dt, out.ptr(), din.ptr(), dwt.ptr(), stride, off, s.E, R, s.C, s.OC, nullptr);
        cuda::moe_expert_backward(dt, dinp.ptr(), dw.ptr(), ddout.ptr(), din.ptr(), dwt.ptr(), stride, off, s.E, R,
                                  s.C, s.OC, GradInto::Overwrite, nullptr);
        cuda::moe_expert_backward(dt, dinp_acc.ptr(), nullptr, ddout.ptr(), din.ptr(), dwt.ptr(), stride, off, s.E,
                                  R, s.C, s.OC, GradInto::Accumulate, nullptr);
        device_sync();
        return std::vector<Bytes>{out.bits(), dinp.bits(), dinp_acc.bits(), dw.bits()};
      };
      require_close_and_repeatable(dt, run,
                                   {{out_ref, {1e-1}}, {dinp_ref, {1e-1}}, {dinp_acc_ref, {1e-1}}, {dw_ref, {5e-1}}});
      // An expert without rows keeps its gradient's bits, and so does the gap between experts.
      const Vec dw = decode(dt, run()[3]);
      for (int e = 0; e < s.E; ++e) {
        const size_t end = size_t(e + 1) * stride;
        const size_t from = offsets[size_t(e)] == offsets[size_t(e) + 1] ? size_t(e) * stride : end - 5;
        for (size_t i = from; i < end; ++i) {
          INFO("expert " << e << " element " << i);
          REQUIRE(dw[i] == dw_base[i]);
        }
      }
    }
}

TEST_CASE("the grouped expert GEMMs reject a bad shape", "[cuda][moe][errors]") {
  REQUIRE_THROWS_WITH(cuda::moe_expert_forward(DType::F32, nullptr, nullptr, nullptr, 0, nullptr, 0, 4, 8, 8, nullptr),
                      Catch::Contains("moe_expert_forward") && Catch::Contains("E = 0"));
  REQUIRE_THROWS_WITH(cuda::moe_group(nullptr, nullptr, nullptr, nullptr, 4, 2, 3, nullptr),
                      Catch::Contains("moe_group") && Catch::Contains("K = 3"));
}

TEST_CASE("the load-balancing loss's statistics match the CPU's bit for bit, padding left out", "[cuda][moe]") {
  // Two layers of 3 rows of 5 tokens, routed at random; the second row's last two tokens are
  // padding, the third row's last one.
  const int B = 3, T = 5, N = B * T, E = 8, K = 2, L = 2;
  const std::vector<int32_t> padding_from{5, 3, 4};
  const size_t width = 2 * E + 1;
  std::vector<double> stats_ref(L * width);
  std::vector<Vec> probs(L);
  std::vector<std::vector<int32_t>> experts(L);
  for (int l = 0; l < L; ++l) {
    probs[size_t(l)].resize(size_t(N) * E);
    experts[size_t(l)].resize(size_t(N) * K);
    Vec weights(size_t(N) * K);
    cpu::moe_route(probs[size_t(l)].data(), experts[size_t(l)].data(), weights.data(),
                   random_vec(size_t(N) * E, 131 + l, 2.0f).data(), N, E, K, true);
    cpu::moe_route_stats(stats_ref.data() + l * width, probs[size_t(l)].data(), experts[size_t(l)].data(),
                         padding_from.data(), T, N, E, K);
  }
  CHECK(stats_ref[2 * E] == 12);  // the tokens that count
  std::vector<float> daux_ref(E);
  cpu::moe_aux_grad(daux_ref.data(), stats_ref.data(), L, E, 0.25f);
  double acc_ref[2] = {0.5, 1.0};
  cpu::moe_aux_accumulate(acc_ref, stats_ref.data(), L, E);
  const Vec x = random_vec(size_t(N) * E, 141);
  Vec x_ref = x;
  cpu::moe_zero_padding(x_ref.data(), padding_from.data(), B, T, E);

  DeviceBuffer dpadding = upload_raw(padding_from);
  auto run = [&] {
    DeviceBuffer stats(L * width * sizeof(double)), daux(E * sizeof(float));
    DeviceBuffer acc = upload_raw(std::vector<double>{0.5, 1.0});
    std::vector<DeviceBuffer> dprobs, dexperts;
    for (int l = 0; l < L; ++l) {
      dprobs.push_back(upload_raw(probs[size_t(l)]));
      dexperts.push_back(upload_raw(experts[size_t(l)]));
      cuda::moe_route_stats(stats.as<double>() + l * width, dprobs.back().as<float>(), dexperts.back().as<int32_t>(),
                            dpadding.as<int32_t>(), T, N, E, K, nullptr);
    }
    cuda::moe_aux_grad(daux.as<float>(), stats.as<double>(), L, E, 0.25f, nullptr);
    cuda::moe_aux_accumulate(acc.as<double>(), stats.as<double>(), L, E, nullptr);
    DeviceTensor dx(DType::F32, x);
    cuda::moe_zero_padding(DType::F32, dx.ptr(), dpadding.as<int32_t>(), B, T, E, nullptr);
    device_sync();
    return std::tuple{download_raw<double>(stats, L * width), download_raw<float>(daux, E),
                      download_raw<double>(acc, 2), dx.values()};
  };
  const auto got = run();
  CHECK(std::get<0>(got) == stats_ref);
  CHECK(std::get<1>(got) == daux_ref);
  CHECK(std::get<2>(got) == std::vector<double>{acc_ref[0], acc_ref[1]});
  CHECK(std::get<3>(got) == x_ref);
  CHECK(run() == got);
}
