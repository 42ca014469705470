#pragma once
// Helpers for the CUDA kernel tests, which build twice from the same sources: on a GPU
// (test_kernels_cuda, linked with zt_kernels_cuda) and on the CPU through cuda_emulator.hpp
// (test_kernels_cuda_emulated, where "device" memory is host memory). Tests use only the public
// launchers and the CUDA runtime calls below, so both builds run exactly the same checks.
//
// Tolerances (the CPU operators of lib/kernels/cpu are the reference, fed the same inputs — in
// bf16 runs, the bf16-rounded inputs):
//   fp32: the norm-wise relative error ||got - want|| / ||want|| is at most 1e-5.
//   bf16: llm.c's rule (dev/cuda/common.h, validate_result): every element within
//         atol + 0.079·|want|, atol per operator as llm.c's dev/cuda tests set it (1e-2 for
//         elementwise ops, 1e-1 for matmul and LayerNorm's input gradient, 5e-1 for its weight
//         gradients); and, tighter than llm.c, a norm-wise relative error of at most 1e-2.
#include <cuda_runtime_api.h>

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <vector>

#include "core/dtype.hpp"

namespace zt::test {

using Vec = std::vector<float>;
using Bytes = std::vector<unsigned char>;

// Built for the CPU emulator: shapes stay small there (one host thread per CUDA thread).
#ifdef ZT_TEST_EMULATED
constexpr bool kEmulated = true;
#else
constexpr bool kEmulated = false;
#endif

// Only the small shapes: on the emulator, or on a GPU when ZT_TEST_SMALL_SHAPES is set (the runs
// under compute-sanitizer, which slows every access down).
bool small_shapes();

Vec random_vec(size_t n, uint64_t seed, float scale = 1.0f);
// v as dt stores it: rounded to the 16-bit type and back (a copy for fp32).
Vec rounded(DType dt, const Vec& v);
Bytes encode(DType dt, const Vec& v);
Vec decode(DType dt, const Bytes& b);

// Device memory (host memory under the emulator), freed on destruction.
class DeviceBuffer {
public:
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }
  template <typename T>
  T* as() const { return static_cast<T*>(ptr_); }
  size_t bytes() const { return bytes_; }
  void upload(const void* src, size_t n, size_t offset = 0);
  void download(void* dst, size_t n, size_t offset = 0) const;
  Bytes download_bytes() const;

private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// A device copy of v in dt (encoded); `pad` extra zero elements in front, so that `at(pad)` is an
// address the kernels' vector paths cannot take (pad = 1) or can (pad = 0).
struct DeviceTensor {
  DeviceTensor(DType dt, const Vec& v, size_t pad = 0);
  DeviceTensor(DType dt, size_t n, size_t pad = 0);  // zeros
  void* ptr() const { return static_cast<unsigned char*>(buffer.get()) + pad * dtype_size(dt); }
  Vec values() const;  // downloaded and decoded to fp32
  Bytes bits() const;  // the raw bytes of the n elements
  DType dt;
  size_t n, pad;
  DeviceBuffer buffer;
};

template <typename T>
DeviceBuffer upload_raw(const std::vector<T>& v) {
  DeviceBuffer b(v.size() * sizeof(T));
  b.upload(v.data(), v.size() * sizeof(T));
  return b;
}

template <typename T>
std::vector<T> download_raw(const DeviceBuffer& b, size_t n) {
  std::vector<T> v(n);
  b.download(v.data(), n * sizeof(T));
  return v;
}

void device_sync();  // waits for the device; a CUDA error fails the test

// ||got - want|| / ||want|| (the absolute norm when want is all zeros).
double relative_error(const Vec& got, const Vec& want);

struct Bf16Tolerance {
  double atol;
  double norm_rtol = 1e-2;
};
void require_close(DType dt, const Vec& got, const Vec& want, Bf16Tolerance bf16, double fp32_rtol = 1e-5);

// What one output of a computation should be: close to `values` (require_close with `bf16`).
struct Want {
  const Vec& values;
  Bf16Tolerance bf16;
};

// Runs `compute` (the raw bytes of its outputs, in the order of `want`) twice: each output close to
// what it should be the first time, and the same bits the second.
template <typename Compute>
void require_close_and_repeatable(DType dt, Compute compute, std::initializer_list<Want> want) {
  const std::vector<Bytes> got = compute();
  size_t i = 0;
  for (const Want& w : want) require_close(dt, decode(dt, got[i++]), w.values, w.bf16);
  const std::vector<Bytes> again = compute();
  for (size_t k = 0; k < got.size(); k++) {
    INFO("output " << k << " again");
    CHECK(again[k] == got[k]);
  }
}

// A kernel test's cases: each dtype the kernels store, each shape, and the tensors packed tight
// (pad 0) or each one element past an aligned start (pad 1), the vector paths' edge.
template <typename Shapes, typename Body>
void for_dtype_shape_pad(const Shapes& shapes, Body body) {
  for (DType dt : {DType::F32, DType::BF16})
    for (const auto& s : shapes)
      for (size_t pad : {0, 1}) body(dt, s, pad);
}

}  // namespace zt::test
