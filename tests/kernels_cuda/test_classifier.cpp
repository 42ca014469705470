// The classifier against kernels/cpu/cross_entropy: lse, per-row losses and their mean;
// dlogits out of place, in place and fused with the forward; padded vocabularies with vector
// (Vp % 8 == 0) and scalar rows; a target outside the vocabulary; the gradient's scale from the
// count of rows that count, read on the device; each row's own weight instead of the count.
#include <cmath>

#include "core/ignored_target.hpp"
#include "core/rng.hpp"
#include "cuda_test_support.hpp"
#include "kernels/cpu/cross_entropy.hpp"
#include "kernels/cuda/classifier.hpp"
#include "kernels/cuda/cuda_moe.hpp"

using namespace zt;
using namespace zt::test;

namespace {

struct Shape {
  int N, V, Vp;
};

std::vector<Shape> shapes() {
  if (small_shapes()) return {{3, 50, 56}, {4, 37, 37}, {2, 3000, 3008}};
  return {{3, 50, 56}, {4, 37, 37}, {2, 3000, 3008}, {1024, 50257, 50304}};
}

std::vector<int32_t> random_targets(int N, int V, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> t(static_cast<size_t>(N));
  for (auto& x : t) x = int32_t(rng.below(uint64_t(V)));
  return t;
}

// Padding columns hold garbage the kernels must ignore.
Vec logits_for(Shape s, uint64_t seed) {
  Vec x = random_vec(size_t(s.N) * s.Vp, seed, 3.0f);
  for (int n = 0; n < s.N; n++)
    for (int v = s.V; v < s.Vp; v++) x[size_t(n) * s.Vp + v] = 1e30f;
  return x;
}

// logits_for's as dt holds them, the padding columns `padding` again after the rounding.
Vec rounded_logits(DType dt, Shape s, uint64_t seed, float padding) {
  Vec logits = rounded(dt, logits_for(s, seed));
  for (size_t i = 0; i < logits.size(); i++)
    if (i % size_t(s.Vp) >= size_t(s.V)) logits[i] = padding;
  return logits;
}

// Five rows, the second and the fourth ignored.
struct MaskedRows {
  Shape s;
  Vec logits;
  std::vector<int32_t> targets;
};
MaskedRows masked_rows(DType dt, uint64_t seed) {
  const Shape s{5, 50, 56};
  return {s, rounded_logits(dt, s, seed, 1e30f), {7, kIgnoredTarget, 49, kIgnoredTarget, 0}};
}

struct Reference {
  Vec lse, losses, dlogits;
  float mean;
};

Reference reference(const Vec& logits, const std::vector<int32_t>& targets, float scale, Shape s) {
  Reference r{Vec(size_t(s.N)), Vec(size_t(s.N)), Vec(logits.size()), 0.0f};
  r.mean = cpu::cross_entropy_forward(r.lse.data(), logits.data(), targets.data(), s.N, s.V, s.Vp);
  for (int n = 0; n < s.N; n++)
    r.losses[size_t(n)] = r.lse[size_t(n)] - logits[size_t(n) * s.Vp + size_t(targets[size_t(n)])];
  cpu::cross_entropy_backward(r.dlogits.data(), logits.data(), r.lse.data(), targets.data(), scale, s.N, s.V, s.Vp);
  return r;
}

}  // namespace

TEST_CASE("classifier forward, backward and fused match the CPU", "[cuda][classifier]") {
  for (DType dt : {DType::F32, DType::BF16})
    for (Shape s : shapes())
      for (size_t pad : {0, 1}) {
        INFO(dtype_name(dt) << " N=" << s.N << " V=" << s.V << " Vp=" << s.Vp << " pad=" << pad);
        const Vec logits = rounded_logits(dt, s, 51, 1e30f);  // bf16 rounding kept them huge
        const auto targets = random_targets(s.N, s.V, 52);
        const float scale = 1.0f / float(s.N);
        const Reference ref = reference(logits, targets, scale, s);

        DeviceTensor dlog(dt, logits, pad), ddl(dt, logits.size(), pad);
        DeviceBuffer dt_targets = upload_raw(targets);
        DeviceBuffer lse(size_t(s.N) * 4), losses(size_t(s.N) * 4), mean(4);
        cuda::classifier_forward(dt, lse.as<float>(), losses.as<float>(), mean.as<float>(), dlog.ptr(),
                                 dt_targets.as<int32_t>(), s.N, s.V, s.Vp, nullptr);
        cuda::classifier_backward(dt, ddl.ptr(), dlog.ptr(), lse.as<float>(), dt_targets.as<int32_t>(), scale, s.N,
                                  s.V, s.Vp, nullptr);
        device_sync();
        require_close(DType::F32, download_raw<float>(lse, size_t(s.N)), ref.lse, {0});
        require_close(DType::F32, download_raw<float>(losses, size_t(s.N)), ref.losses, {0});
        CHECK(std::abs(download_raw<float>(mean, 1)[0] - ref.mean) <= 1e-5f * std::abs(ref.mean));
        require_close(dt, ddl.values(), ref.dlogits, {1e-4});

        // in place over the logits
        DeviceTensor inplace(dt, logits, pad);
        cuda::classifier_backward(dt, inplace.ptr(), inplace.ptr(), lse.as<float>(), dt_targets.as<int32_t>(), scale,
                                  s.N, s.V, s.Vp, nullptr);
        device_sync();
        CHECK(inplace.bits() == ddl.bits());

        // fused: the same lse, losses, mean and gradient in one pass
        DeviceTensor fused(dt, logits, pad);
        DeviceBuffer lse2(size_t(s.N) * 4), losses2(size_t(s.N) * 4), mean2(4);
        cuda::classifier_fused(dt, fused.ptr(), lse2.as<float>(), losses2.as<float>(), mean2.as<float>(),
                               dt_targets.as<int32_t>(), scale, s.N, s.V, s.Vp, nullptr);
        device_sync();
        CHECK(lse2.download_bytes() == lse.download_bytes());
        CHECK(losses2.download_bytes() == losses.download_bytes());
        CHECK(mean2.download_bytes() == mean.download_bytes());
        CHECK(fused.bits() == ddl.bits());
      }
}

TEST_CASE("classifier: a target outside the vocabulary gives a NaN loss and no out-of-row access",
          "[cuda][classifier]") {
  const Shape s{2, 10, 16};
  const Vec logits = logits_for(s, 53);
  const std::vector<int32_t> targets{3, 12};  // 12 >= V
  DeviceTensor dlog(DType::F32, logits);
  DeviceBuffer dtg = upload_raw(targets), lse(8), losses(8), mean(4);
  cuda::classifier_fused(DType::F32, dlog.ptr(), lse.as<float>(), losses.as<float>(), mean.as<float>(),
                         dtg.as<int32_t>(), 0.5f, s.N, s.V, s.Vp, nullptr);
  device_sync();
  const Vec l = download_raw<float>(losses, 2);
  CHECK(std::isfinite(l[0]));
  CHECK(std::isnan(l[1]));
  CHECK(std::isnan(download_raw<float>(mean, 1)[0]));
  const Vec d = dlog.values();
  double row_sum = 0;
  for (int v = 0; v < s.V; v++) row_sum += d[size_t(s.Vp) + size_t(v)];
  CHECK(row_sum == Approx(0.5).epsilon(1e-5));  // softmax sums to 1, no -1 subtracted
}

TEST_CASE("classifier: ignored targets carry no loss and no gradient, as on the CPU", "[cuda][classifier][mask]") {
  for (DType dt : {DType::F32, DType::BF16}) {
    INFO(dtype_name(dt));
    const auto [s, logits, targets] = masked_rows(dt, 54);
    const float scale = 1.0f / 3.0f;  // dloss / the rows that count
    Vec want_lse(size_t(s.N)), want_d(logits.size());
    const float want_mean = cpu::cross_entropy_forward(want_lse.data(), logits.data(), targets.data(), s.N, s.V, s.Vp);
    cpu::cross_entropy_backward(want_d.data(), logits.data(), want_lse.data(), targets.data(), scale, s.N, s.V, s.Vp);

    DeviceTensor fused(dt, logits), unfused(dt, logits), ddl(dt, logits.size());
    DeviceBuffer dtg = upload_raw(targets), lse(20), losses(20), mean(4), mean2(4);
    cuda::classifier_forward(dt, lse.as<float>(), losses.as<float>(), mean.as<float>(), unfused.ptr(),
                             dtg.as<int32_t>(), s.N, s.V, s.Vp, nullptr);
    cuda::classifier_backward(dt, ddl.ptr(), unfused.ptr(), lse.as<float>(), dtg.as<int32_t>(), scale, s.N, s.V, s.Vp,
                              nullptr);
    cuda::classifier_fused(dt, fused.ptr(), lse.as<float>(), losses.as<float>(), mean2.as<float>(),
                           dtg.as<int32_t>(), scale, s.N, s.V, s.Vp, nullptr);
    device_sync();
    const float got = download_raw<float>(mean, 1)[0];
    CHECK(std::abs(got - want_mean) <= 1e-5f * std::abs(want_mean));
    CHECK(mean2.download_bytes() == mean.download_bytes());
    require_close(dt, ddl.values(), want_d, {1e-4});
    CHECK(fused.bits() == ddl.bits());
    const Vec d = ddl.values();
    for (int n : {1, 3})
      for (int v = 0; v < s.Vp; v++) REQUIRE(d[size_t(n) * s.Vp + size_t(v)] == 0.0f);
  }
}

TEST_CASE("classifier: rows weighted each by its own weight, as on the CPU", "[cuda][classifier][preference]") {
  for (DType dt : {DType::F32, DType::BF16})
    for (float softcap : {0.0f, 2.0f}) {
      INFO(dtype_name(dt) << " softcap " << softcap);
      const Shape s{5, 50, 56};
      Vec logits = rounded(dt, logits_for(s, 56));
      for (size_t i = 0; i < logits.size(); i++)
        if (i % size_t(s.Vp) >= size_t(s.V)) logits[i] = 1e30f;
      if (softcap > 0)
        for (size_t i = 0; i < logits.size(); i++)
          if (i % size_t(s.Vp) < size_t(s.V)) logits[i] = rounded(dt, Vec{softcap * std::tanh(logits[i] / softcap)})[0];
      const std::vector<int32_t> targets{7, kIgnoredTarget, 49, 3, 0};
      // A negative weight, a zero, and one on the ignored row that must not be read.
      const std::vector<float> weights{0.7f, 1e30f, -0.25f, 0.0f, 1.5f};
      const float dloss = 0.5f;
      Vec lse_host(size_t(s.N)), want_d(logits.size());
      cpu::cross_entropy_forward(lse_host.data(), logits.data(), targets.data(), s.N, s.V, s.Vp);
      cpu::cross_entropy_backward(want_d.data(), logits.data(), lse_host.data(), targets.data(), dloss, s.N, s.V, s.Vp,
                                  softcap, weights.data());
      // The CPU's rows are its unweighted gradient times dloss · the weight.
      Vec unit(logits.size());
      cpu::cross_entropy_backward(unit.data(), logits.data(), lse_host.data(), targets.data(), 1.0f, s.N, s.V, s.Vp,
                                  softcap);
      for (int n : {0, 2, 4})
        for (int v = 0; v < s.V; v++)
          REQUIRE(want_d[size_t(n) * s.Vp + size_t(v)] ==
                  Approx(dloss * weights[size_t(n)] * unit[size_t(n) * s.Vp + size_t(v)]).margin(1e-7));

      DeviceTensor dlog(dt, logits), ddl(dt, logits.size());
      DeviceBuffer dtg = upload_raw(targets), dw = upload_raw(weights), lse(20), losses(20), mean(4);
      cuda::classifier_forward(dt, lse.as<float>(), losses.as<float>(), mean.as<float>(), dlog.ptr(),
                               dtg.as<int32_t>(), s.N, s.V, s.Vp, nullptr);
      cuda::classifier_backward(dt, ddl.ptr(), dlog.ptr(), lse.as<float>(), dtg.as<int32_t>(), nullptr, dloss, s.N,
                                s.V, s.Vp, nullptr, softcap, dw.as<float>());
      device_sync();
      require_close(dt, ddl.values(), want_d, {1e-4});
      const Vec d = ddl.values();
      for (int n : {1, 3})
        for (int v = 0; v < s.Vp; v++) REQUIRE(d[size_t(n) * s.Vp + size_t(v)] == 0.0f);
    }
}

TEST_CASE("classifier: the mean loss of rows that are all ignored is NaN", "[cuda][classifier][mask]") {
  const Shape s{2, 10, 16};
  const Vec logits = logits_for(s, 55);
  const std::vector<int32_t> targets{kIgnoredTarget, kIgnoredTarget};
  DeviceTensor dlog(DType::F32, logits);
  DeviceBuffer dtg = upload_raw(targets), lse(8), losses(8), mean(4);
  cuda::classifier_fused(DType::F32, dlog.ptr(), lse.as<float>(), losses.as<float>(), mean.as<float>(),
                         dtg.as<int32_t>(), 0.5f, s.N, s.V, s.Vp, nullptr);
  device_sync();
  CHECK(std::isnan(download_raw<float>(mean, 1)[0]));
  for (float g : dlog.values()) REQUIRE(g == 0.0f);
}

// What the model's operator table runs: the losses chunk by chunk, the mean and its count once, the
// gradient scaled by dloss over the count the kernel reads (as a replayed graph reads it).
TEST_CASE("classifier: the gradient's scale is dloss over the rows counted on the device", "[cuda][classifier][mask]") {
  for (DType dt : {DType::F32, DType::BF16}) {
    INFO(dtype_name(dt));
    const auto [s, logits, targets] = masked_rows(dt, 56);
    const float dloss = 0.7f;
    DeviceTensor dlog(dt, logits), by_count(dt, logits.size()), by_scale(dt, logits.size());
    DeviceBuffer dtg = upload_raw(targets), lse(20), losses(20), mean(4), mean2(4), counted(4);
    // Two chunks of rows, then the mean over all five.
    cuda::classifier_losses(dt, lse.as<float>(), losses.as<float>(), dlog.ptr(), dtg.as<int32_t>(), 2, s.V, s.Vp,
                            nullptr);
    cuda::classifier_losses(dt, lse.as<float>() + 2, losses.as<float>() + 2,
                            static_cast<const char*>(dlog.ptr()) + 2 * size_t(s.Vp) * dtype_size(dt),
                            dtg.as<int32_t>() + 2, 3, s.V, s.Vp, nullptr);
    cuda::classifier_mean(mean.as<float>(), counted.as<int32_t>(), losses.as<float>(), dtg.as<int32_t>(), s.N,
                          nullptr);
    cuda::classifier_forward(dt, lse.as<float>(), losses.as<float>(), mean2.as<float>(), dlog.ptr(),
                             dtg.as<int32_t>(), s.N, s.V, s.Vp, nullptr);
    cuda::classifier_backward(dt, by_count.ptr(), dlog.ptr(), lse.as<float>(), dtg.as<int32_t>(),
                              counted.as<int32_t>(), dloss, s.N, s.V, s.Vp, nullptr);
    cuda::classifier_backward(dt, by_scale.ptr(), dlog.ptr(), lse.as<float>(), dtg.as<int32_t>(), dloss / 3.0f, s.N,
                              s.V, s.Vp, nullptr);
    device_sync();
    CHECK(download_raw<int32_t>(counted, 1)[0] == 3);
    CHECK(mean.download_bytes() == mean2.download_bytes());
    CHECK(by_count.bits() == by_scale.bits());

    // No row that counts: a zero gradient, whatever dloss.
    const std::vector<int32_t> none(size_t(s.N), kIgnoredTarget);
    DeviceBuffer dnone = upload_raw(none);
    cuda::classifier_mean(mean.as<float>(), counted.as<int32_t>(), losses.as<float>(), dnone.as<int32_t>(), s.N,
                          nullptr);
    cuda::classifier_backward(dt, by_count.ptr(), dlog.ptr(), lse.as<float>(), dnone.as<int32_t>(),
                              counted.as<int32_t>(), dloss, s.N, s.V, s.Vp, nullptr);
    device_sync();
    CHECK(download_raw<int32_t>(counted, 1)[0] == 0);
    for (float g : by_count.values()) REQUIRE(g == 0.0f);
  }
}

TEST_CASE("classifier rejects Vp < V", "[cuda][classifier][errors]") {
  REQUIRE_THROWS_WITH(cuda::classifier_forward(DType::F32, nullptr, nullptr, nullptr, nullptr, nullptr, 1, 10, 8,
                                               nullptr),
                      Catch::Contains("classifier_forward") && Catch::Contains("Vp >= V"));
}

TEST_CASE("classifier: soft-capped logits and their gradient before the cap match the CPU",
          "[cuda][classifier][softcap]") {
  // Gemma's final_logit_softcapping: softcap_forward in place, then the loss over the capped
  // logits and classifier_backward's gradient of the logits before the cap, in place.
  const Shape s = shapes().front();
  const float cap = 2.0f;
  for (DType dt : {DType::F32, DType::BF16}) {
    INFO(dtype_name(dt));
    const Vec logits = rounded_logits(dt, s, 61, 0.0f);  // the padding columns the head writes
    const auto targets = random_targets(s.N, s.V, 62);
    Vec capped = logits;
    cpu::softcap_forward(capped.data(), capped.size(), cap);
    capped = rounded(dt, capped);  // as the device holds them
    Vec lse_ref(size_t(s.N)), losses_ref(size_t(s.N)), dlogits_ref = capped;
    cpu::cross_entropy_losses(lse_ref.data(), losses_ref.data(), capped.data(), targets.data(), s.N, s.V, s.Vp);
    cpu::cross_entropy_backward(dlogits_ref.data(), dlogits_ref.data(), lse_ref.data(), targets.data(), 0.5f, s.N,
                                s.V, s.Vp, cap);

    DeviceTensor x(dt, logits);
    DeviceBuffer dt_targets = upload_raw(targets), counted = upload_raw(std::vector<int32_t>{2});
    DeviceBuffer lse(size_t(s.N) * 4), losses(size_t(s.N) * 4);
    cuda::softcap_forward(dt, x.ptr(), logits.size(), cap, nullptr);
    device_sync();
    require_close(dt, x.values(), capped, {1e-2});
    cuda::classifier_losses(dt, lse.as<float>(), losses.as<float>(), x.ptr(), dt_targets.as<int32_t>(), s.N, s.V,
                            s.Vp, nullptr);
    cuda::classifier_backward(dt, x.ptr(), x.ptr(), lse.as<float>(), dt_targets.as<int32_t>(), counted.as<int32_t>(),
                              1.0f, s.N, s.V, s.Vp, nullptr, cap);
    device_sync();
    require_close(dt, x.values(), dlogits_ref, {1e-2}, 1e-4);
  }
}

// The LM head on the rows that count (Gpt): their numbers and targets found on the device in one
// block (tiles of 1024 targets, more than one here), the final norm's rows gathered, and their
// gradient scattered back over rows of zeros, as kernels/cpu computes them.
TEST_CASE("classifier: the rows whose target counts, gathered and scattered back", "[cuda][classifier][mask]") {
  const int N = small_shapes() ? 2500 : 40000, C = 24;
  std::vector<int32_t> targets(size_t(N), kIgnoredTarget);
  Rng rng(57);
  for (int n = 0; n < N; n++)
    if (n % 1024 == 1023 || rng.below(3) == 0) targets[size_t(n)] = int32_t(rng.below(50000));
  std::vector<int32_t> want_rows(static_cast<size_t>(N)), want_targets(static_cast<size_t>(N));
  const int M = cpu::counted_rows(want_rows.data(), want_targets.data(), targets.data(), N);
  want_rows.resize(size_t(M));
  want_targets.resize(size_t(M));
  REQUIRE((M > 0 && M < N));

  DeviceBuffer dtg = upload_raw(targets), rows(size_t(N) * 4), row_targets(size_t(N) * 4);
  cuda::counted_rows(rows.as<int32_t>(), row_targets.as<int32_t>(), dtg.as<int32_t>(), N, nullptr);
  device_sync();
  CHECK(download_raw<int32_t>(rows, size_t(M)) == want_rows);
  CHECK(download_raw<int32_t>(row_targets, size_t(M)) == want_targets);

  for (DType dt : {DType::F32, DType::BF16}) {
    INFO(dtype_name(dt));
    const Vec x = rounded(dt, random_vec(size_t(N) * C, 58));
    const Vec drows = rounded(dt, random_vec(size_t(M) * C, 59));
    DeviceTensor dx(dt, x), gathered(dt, size_t(M) * C), grad(dt, drows);
    DeviceTensor scattered(dt, random_vec(size_t(N) * C, 60));  // written over, garbage and all
    cuda::moe_gather(dt, gathered.ptr(), dx.ptr(), rows.as<int32_t>(), M, C, nullptr);
    cuda::scatter_rows(dt, scattered.ptr(), grad.ptr(), rows.as<int32_t>(), M, N, C, nullptr);
    device_sync();
    Vec want_gathered(size_t(M) * C), want_scattered(size_t(N) * C);
    for (int r = 0; r < M; r++)
      for (int c = 0; c < C; c++) want_gathered[size_t(r) * C + c] = x[size_t(want_rows[size_t(r)]) * C + c];
    cpu::scatter_rows(want_scattered.data(), drows.data(), want_rows.data(), M, N, C);
    CHECK(gathered.values() == want_gathered);
    CHECK(scattered.values() == want_scattered);
  }
}
