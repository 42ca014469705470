// The engine's operator table on the CPU: conversions, in-place adds, rounding, the gradient norm's
// sum of squares and AdamW, against direct computations.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <omp.h>
#include <random>
#include <vector>

#include "kernels/backend.hpp"
#include "optim/adamw.hpp"
#include "random_floats.hpp"

using namespace zt;
using zt::test::random_floats;

namespace {
VectorOps& ops() { return cpu_backend().vector; }
ConstView cview(const void* p, DType t) { return {p, t, MemSpace::Host}; }
View view(void* p, DType t) { return {p, t, MemSpace::Host}; }

}  // namespace

TEST_CASE("sum_of_squares is accurate and independent of the thread count", "[kernels][vector]") {
  const size_t n = 300001;
  std::mt19937 gen(11);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = normal(gen) * (i % 7 == 0 ? 1e3f : 1e-3f);

  long double reference = 0;  // plain sequential sum in extended precision
  for (float f : x) reference += (long double)f * f;

  int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  double one = ops().sum_of_squares(cview(x.data(), DType::F32), n, 1.0f);
  omp_set_num_threads(2);
  double two = ops().sum_of_squares(cview(x.data(), DType::F32), n, 1.0f);
  omp_set_num_threads(saved);

  CHECK(one == two);  // bit-identical
  CHECK(std::fabs(one - double(reference)) <= 1e-12 * double(reference));
  CHECK(ops().sum_of_squares(cview(x.data(), DType::F32), 0, 1.0f) == 0.0);
  float three[3] = {1.f, -2.f, 2.f};
  CHECK(ops().sum_of_squares(cview(three, DType::F32), 3, 1.0f) == 9.0);
  CHECK(ops().sum_of_squares(cview(three, DType::F32), 3, 0.5f) == 2.25);  // scaled before squaring
}

TEST_CASE("sum_of_squares of 16-bit values equals that of their fp32 values", "[kernels][vector]") {
  auto x = random_floats(40000, 3);
  for (DType t : {DType::BF16, DType::F16}) {
    std::vector<uint16_t> h(x.size());
    from_f32(t, x.data(), h.data(), x.size());
    std::vector<float> back(x.size());
    to_f32(t, h.data(), back.data(), x.size());
    CHECK(ops().sum_of_squares(cview(h.data(), t), x.size(), 0.25f) ==
          ops().sum_of_squares(cview(back.data(), DType::F32), x.size(), 0.25f));
  }
}

TEST_CASE("convert, add and round_to round once, to nearest even", "[kernels][vector]") {
  auto a = random_floats(20001, 5), b = random_floats(20001, 6, 1e-2f);
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    INFO(dtype_name(t));
    const size_t esz = dtype_size(t);
    std::vector<uint8_t> stored(a.size() * esz), want(a.size() * esz);
    ops().convert(cview(a.data(), DType::F32), view(stored.data(), t), a.size());
    from_f32(t, a.data(), want.data(), a.size());
    CHECK(stored == want);

    // add: float(stored) + b, rounded once to t.
    std::vector<float> sum(a.size());
    to_f32(t, stored.data(), sum.data(), a.size());
    for (size_t i = 0; i < a.size(); ++i) sum[i] += b[i];
    from_f32(t, sum.data(), want.data(), a.size());
    ops().add(cview(b.data(), DType::F32), view(stored.data(), t), a.size());
    CHECK(stored == want);

    // round_to: what t can hold, as fp32.
    std::vector<float> rounded = a;
    ops().round_to(t, rounded.data(), rounded.size());
    std::vector<float> expected(a.size());
    from_f32(t, a.data(), want.data(), a.size());
    to_f32(t, want.data(), expected.data(), a.size());
    CHECK(std::memcmp(rounded.data(), expected.data(), a.size() * 4) == 0);
  }
}

TEST_CASE("adamw over segments equals adamw_update per segment, and writes the 16-bit parameters",
          "[kernels][vector]") {
  const size_t n = 50000;
  auto w0 = random_floats(n, 7, 0.02f), g = random_floats(n, 8);
  // Two segments with decay, one without, and a gap that must stay untouched.
  const std::vector<AdamSegment> segments = {{0, 20000, true}, {20000, 10000, false}, {35000, 15000, true}};
  const AdamWHyper hyper{1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, true, true};
  const float factor = 0.5f;

  std::vector<float> master = w0, m(n, 0.f), v(n, 0.f);
  std::vector<uint16_t> params(n, 0);
  std::vector<float> rw = w0, rm(n, 0.f), rv(n, 0.f);
  for (int64_t step = 1; step <= 3; ++step) {
    ops().adamw(segments, {master.data(), m.data(), v.data()}, cview(g.data(), DType::F32), factor,
                view(params.data(), DType::BF16), hyper, step);
    for (const AdamSegment& s : segments) {
      std::vector<float> scaled(g.begin() + s.offset, g.begin() + s.offset + s.size);
      for (float& x : scaled) x *= factor;
      adamw_update(rw.data() + s.offset, scaled.data(), rm.data() + s.offset, rv.data() + s.offset, s.size, hyper,
                   step, s.decay);
    }
  }
  CHECK(std::memcmp(master.data(), rw.data(), n * 4) == 0);
  CHECK(std::memcmp(m.data(), rm.data(), n * 4) == 0);
  CHECK(std::memcmp(v.data(), rv.data(), n * 4) == 0);
  for (size_t i = 30000; i < 35000; ++i) REQUIRE(master[i] == w0[i]);  // the gap
  std::vector<uint16_t> want(n);
  from_f32(DType::BF16, master.data(), want.data(), n);
  for (const AdamSegment& s : segments)
    CHECK(std::memcmp(params.data() + s.offset, want.data() + s.offset, s.size * 2) == 0);

  // fp32 training: the parameters are the master; nothing else is written.
  std::vector<float> w = w0, m2(n, 0.f), v2(n, 0.f);
  ops().adamw(segments, {w.data(), m2.data(), v2.data()}, cview(g.data(), DType::F32), factor,
              view(w.data(), DType::F32), hyper, 1);
  std::vector<float> r = w0, rm2(n, 0.f), rv2(n, 0.f);
  for (const AdamSegment& s : segments) {
    std::vector<float> scaled(g.begin() + s.offset, g.begin() + s.offset + s.size);
    for (float& x : scaled) x *= factor;
    adamw_update(r.data() + s.offset, scaled.data(), rm2.data() + s.offset, rv2.data() + s.offset, s.size, hyper, 1,
                 s.decay);
  }
  CHECK(std::memcmp(w.data(), r.data(), n * 4) == 0);
}
