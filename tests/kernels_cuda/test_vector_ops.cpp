// The engine's vector ops against core/dtype.hpp, bit for bit: casts of every 16-bit value and of
// fp32 values around every rounding boundary (ties, overflow, subnormals, NaN payloads);
// add-into for every pair of types; scale; fill; and the sum-of-squares partials against a
// double-precision sum per 16384-element chunk.
#include <cmath>
#include <limits>

#include "core/rng.hpp"
#include "cuda_test_support.hpp"
#include "kernels/cuda/cuda_vector_ops.hpp"

using namespace zt;
using namespace zt::test;

namespace {

const DType kTypes[] = {DType::F32, DType::BF16, DType::F16};

// Raw elements of any type as bytes on the device, from a pad-element offset.
struct RawTensor {
  RawTensor(DType t, const Bytes& b, size_t pad_elements)
      : dt(t), pad(pad_elements), buffer(b.size() + pad * dtype_size(t)) {
    buffer.upload(b.data(), b.size(), pad * dtype_size(t));
  }
  void* ptr() const { return static_cast<unsigned char*>(buffer.get()) + pad * dtype_size(dt); }
  Bytes bits(size_t n) const {
    Bytes b(n * dtype_size(dt));
    buffer.download(b.data(), b.size(), pad * dtype_size(dt));
    return b;
  }
  DType dt;
  size_t pad;
  DeviceBuffer buffer;
};

Bytes every_16bit_value() {
  Bytes b(65536 * 2);
  for (uint32_t i = 0; i < 65536; i++) {
    const uint16_t h = uint16_t(i);
    std::memcpy(&b[2 * i], &h, 2);
  }
  return b;
}

// fp32 values at and around every bf16 and fp16 value (±1 ulp, and the midpoints to the next
// value: the ties), specials, and random values over the whole range.
Vec hard_fp32_values() {
  Vec v;
  for (uint32_t i = 0; i < 65536; i++) {
    const uint32_t bf = i << 16;
    for (uint32_t u : {bf, bf + 1, bf - 1, bf + 0x8000, bf + 0x7fff, bf + 0x8001}) v.push_back(bits_f32(u));
    const float h = f16_to_f32(uint16_t(i));
    v.push_back(h);
    v.push_back(std::nextafter(h, 1e30f));
    v.push_back(std::nextafter(h, -1e30f));
  }
  for (float x : {0.0f, -0.0f, 65504.0f, 65519.99f, 65520.0f, 1e-8f, 2.98e-8f, 2.99e-8f, 5.96e-8f,
                  std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::max()})
    v.push_back(x);
  for (uint32_t payload : {0x7fc00000u, 0x7f800001u, 0xffc12345u, 0x7fbfffffu}) v.push_back(bits_f32(payload));
  Rng rng(81);
  for (int i = 0; i < 20000; i++) v.push_back(bits_f32(uint32_t(rng.next_u64())));
  return v;
}

Bytes f32_bytes(const Vec& v) {
  Bytes b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

Bytes convert_on_host(DType src, const Bytes& b, DType dst) {
  const size_t n = b.size() / dtype_size(src);
  Bytes out(n * dtype_size(dst));
  convert(src, b.data(), dst, out.data(), n);
  return out;
}

}  // namespace

TEST_CASE("cast gives core/dtype.hpp's bits for every 16-bit value and hard fp32 values", "[cuda][vector][cast]") {
  const Bytes all16 = every_16bit_value();
  const Bytes f32 = f32_bytes(hard_fp32_values());
  for (DType src : kTypes)
    for (DType dst : kTypes)
      for (size_t pad : {0, 1}) {
        INFO(dtype_name(src) << " -> " << dtype_name(dst) << " pad=" << pad);
        const Bytes& in = src == DType::F32 ? f32 : all16;
        const size_t n = in.size() / dtype_size(src);
        RawTensor s(src, in, pad), d(dst, Bytes(n * dtype_size(dst), 0), pad);
        cuda::cast(dst, d.ptr(), src, s.ptr(), n, nullptr);
        device_sync();
        CHECK(d.bits(n) == convert_on_host(src, in, dst));
      }
}

TEST_CASE("add_into, scale and fill round once, like the CPU", "[cuda][vector]") {
  const size_t n = 5000 + 3;
  const Vec a = random_vec(n, 82, 100.0f), b = random_vec(n, 83, 0.01f);
  for (DType dst : kTypes)
    for (DType src : kTypes)
      for (size_t pad : {0, 1}) {
        INFO(dtype_name(dst) << " += " << dtype_name(src) << " pad=" << pad);
        const Bytes da = encode(dst, a), sb = encode(src, b);
        RawTensor d(dst, da, pad), s(src, sb, pad);
        cuda::add_into(dst, d.ptr(), src, s.ptr(), n, nullptr);
        device_sync();
        Vec want = decode(dst, da);
        const Vec add = decode(src, sb);
        for (size_t i = 0; i < n; i++) want[i] += add[i];
        CHECK(d.bits(n) == encode(dst, want));
      }
  for (DType t : kTypes)
    for (size_t pad : {0, 1}) {
      INFO(dtype_name(t) << " pad=" << pad);
      const Bytes x = encode(t, a);
      RawTensor d(t, x, pad);
      cuda::scale(t, d.ptr(), 0.37f, n, nullptr);
      device_sync();
      Vec want = decode(t, x);
      for (auto& v : want) v *= 0.37f;
      CHECK(d.bits(n) == encode(t, want));

      cuda::fill(t, d.ptr(), 1.0f / 3.0f, n - 1, nullptr);
      device_sync();
      Vec filled(n - 1, 1.0f / 3.0f);
      const Bytes got = d.bits(n);
      CHECK(Bytes(got.begin(), got.end() - long(dtype_size(t))) == encode(t, filled));
      CHECK(Bytes(got.end() - long(dtype_size(t)), got.end()) == encode(t, Vec{want.back()}));  // untouched
    }
}

TEST_CASE("sum_squares_partials sums fixed 16384-element chunks", "[cuda][vector][norm]") {
  const size_t n = 2 * cuda::kSumSquaresChunk + 1234;
  const Vec g = random_vec(n, 84, 3.0f);
  const float factor = 0.125f;
  for (DType t : kTypes)
    for (size_t pad : {0, 1}) {
      INFO(dtype_name(t) << " pad=" << pad);
      const Bytes x = encode(t, g);
      const Vec values = decode(t, x);
      RawTensor d(t, x, pad);
      const size_t chunks = cuda::sum_squares_partial_count(n);
      REQUIRE(chunks == 3);
      DeviceBuffer partials(chunks * sizeof(double));
      cuda::sum_squares_partials(t, d.ptr(), n, factor, partials.as<double>(), nullptr);
      device_sync();
      const auto got = download_raw<double>(partials, chunks);
      for (size_t c = 0; c < chunks; c++) {
        double want = 0;
        for (size_t i = c * cuda::kSumSquaresChunk; i < std::min(n, (c + 1) * cuda::kSumSquaresChunk); i++) {
          const double v = double(values[i] * factor);
          want += v * v;
        }
        CHECK(std::abs(got[c] - want) <= 1e-13 * want);
      }
      DeviceBuffer again(chunks * sizeof(double));
      cuda::sum_squares_partials(t, d.ptr(), n, factor, again.as<double>(), nullptr);
      device_sync();
      CHECK(again.download_bytes() == partials.download_bytes());
    }
}
