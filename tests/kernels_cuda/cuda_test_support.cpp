#include "cuda_test_support.hpp"

#include <cmath>
#include <cstdlib>

#include "core/rng.hpp"

namespace zt::test {

namespace {
void check(cudaError_t status, const char* what) {
  INFO(what << ": " << cudaGetErrorString(status));
  REQUIRE(status == cudaSuccess);
}
}  // namespace

bool small_shapes() {
  static const bool small = kEmulated || std::getenv("ZT_TEST_SMALL_SHAPES") != nullptr;
  return small;
}

Vec random_vec(size_t n, uint64_t seed, float scale) {
  Rng rng(seed);
  Vec v(n);
  for (auto& x : v) x = float(rng.normal()) * scale;
  return v;
}

Bytes encode(DType dt, const Vec& v) {
  Bytes b(v.size() * dtype_size(dt));
  from_f32(dt, v.data(), b.data(), v.size());
  return b;
}

Vec decode(DType dt, const Bytes& b) {
  Vec v(b.size() / dtype_size(dt));
  to_f32(dt, b.data(), v.data(), v.size());
  return v;
}

Vec rounded(DType dt, const Vec& v) { return decode(dt, encode(dt, v)); }

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) { check(cudaMalloc(&ptr_, bytes ? bytes : 1), "cudaMalloc"); }

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);
}

void DeviceBuffer::upload(const void* src, size_t n, size_t offset) {
  REQUIRE(offset + n <= bytes_);
  if (n) check(cudaMemcpy(static_cast<char*>(ptr_) + offset, src, n, cudaMemcpyHostToDevice), "cudaMemcpy");
}

void DeviceBuffer::download(void* dst, size_t n, size_t offset) const {
  REQUIRE(offset + n <= bytes_);
  if (n) check(cudaMemcpy(dst, static_cast<const char*>(ptr_) + offset, n, cudaMemcpyDeviceToHost), "cudaMemcpy");
}

Bytes DeviceBuffer::download_bytes() const {
  Bytes b(bytes_);
  download(b.data(), bytes_);
  return b;
}

DeviceTensor::DeviceTensor(DType type, const Vec& v, size_t pad_elements)
    : dt(type), n(v.size()), pad(pad_elements), buffer((v.size() + pad_elements) * dtype_size(type)) {
  const Bytes zeros(pad * dtype_size(dt), 0);
  buffer.upload(zeros.data(), zeros.size());
  const Bytes b = encode(dt, v);
  buffer.upload(b.data(), b.size(), pad * dtype_size(dt));
}

DeviceTensor::DeviceTensor(DType type, size_t count, size_t pad_elements)
    : DeviceTensor(type, Vec(count, 0.0f), pad_elements) {}

Bytes DeviceTensor::bits() const {
  Bytes b(n * dtype_size(dt));
  buffer.download(b.data(), b.size(), pad * dtype_size(dt));
  return b;
}

Vec DeviceTensor::values() const { return decode(dt, bits()); }

void device_sync() { check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }

double relative_error(const Vec& got, const Vec& want) {
  REQUIRE(got.size() == want.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); i++) {
    const double d = double(got[i]) - double(want[i]);
    num += d * d;
    den += double(want[i]) * double(want[i]);
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

void require_close(DType dt, const Vec& got, const Vec& want, Bf16Tolerance bf16, double fp32_rtol) {
  REQUIRE(got.size() == want.size());
  // One assertion per tensor (a REQUIRE per element would take longer than the kernels).
  size_t bad = got.size();
  for (size_t i = 0; i < got.size() && bad == got.size(); i++) {
    const double diff = std::abs(double(got[i]) - double(want[i]));
    if (!std::isfinite(got[i]) || (dt != DType::F32 && diff > bf16.atol + 0.079 * std::abs(double(want[i])))) bad = i;
  }
  if (bad < got.size()) {
    INFO("element " << bad << " of " << got.size() << ": got " << got[bad] << ", want " << want[bad]);
    REQUIRE(false);
  }
  const double err = relative_error(got, want);
  INFO("norm-wise relative error " << err << " over " << got.size() << " elements");
  REQUIRE(err <= (dt == DType::F32 ? fp32_rtol : bf16.norm_rtol));
}

}  // namespace zt::test
