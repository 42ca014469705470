#include "comm_test_support.hpp"

#include <fmt/format.h>

#include <cmath>
#include <memory>

#include "comm/mpi_communicator.hpp"

namespace zt::test {
namespace {

std::unique_ptr<Communicator> make(MpiCommOptions options) {
  test_session();
  options.timeout_seconds = kTestCommTimeout;
  return make_mpi_communicator(options);
}

float to_dtype_and_back(float v, DType dtype) {
  switch (dtype) {
    case DType::F32: return v;
    case DType::BF16: return bf16_to_f32(f32_to_bf16(v));
    case DType::F16: return f16_to_f32(f32_to_f16(v));
  }
  return v;
}

float element(const Bytes& b, size_t i, DType dtype) {
  float v;
  to_f32(dtype, b.data() + i * dtype_size(dtype), &v, 1);
  return v;
}

}  // namespace

MpiSession& test_session() {
  static MpiSession s;
  return s;
}

// Communicators are created on first use; every rank runs the same test cases in the same
// order, so creation (a collective) happens in step on all ranks.
Communicator& comm() {
  static auto c = make({});
  return *c;
}

Communicator& small_chunk_comm() {
  MpiCommOptions options;
  options.chunk_elements = 7;
  static auto c = make(options);
  return *c;
}

Communicator& checked_comm() {
  MpiCommOptions options;
  options.sequence_check = true;
  static auto c = make(options);
  return *c;
}

float input_value(int rank, size_t index, DType dtype) {
  const uint64_t h = (uint64_t(index) * 2654435761u + uint64_t(rank) * 40503u + 17) % 2001;
  const int exponent = int((index + 3 * size_t(rank)) % 7) - 3;
  const float v = std::ldexp(float(int(h) - 1000), exponent) + 0.1f * float(rank + 1);
  return to_dtype_and_back(v, dtype);
}

Bytes make_input(int rank, size_t first_index, size_t count, DType dtype) {
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i) values[i] = input_value(rank, first_index + i, dtype);
  Bytes b(count * dtype_size(dtype));
  if (count) from_f32(dtype, values.data(), b.data(), count);
  return b;
}

Bytes expected_reduction(int world, size_t first_index, size_t count, DType dtype, ReduceOp op) {
  std::vector<float> acc(count);
  for (size_t i = 0; i < count; ++i) {
    float a = input_value(0, first_index + i, dtype);
    for (int r = 1; r < world; ++r) {
      const float v = input_value(r, first_index + i, dtype);
      a = op == ReduceOp::Sum ? a + v : std::max(a, v);
    }
    acc[i] = a;
  }
  Bytes b(count * dtype_size(dtype));
  if (count) from_f32(dtype, acc.data(), b.data(), count);
  return b;
}

Bytes filled(size_t count, DType dtype, float value) {
  std::vector<float> values(count, value);
  Bytes b(count * dtype_size(dtype));
  if (count) from_f32(dtype, values.data(), b.data(), count);
  return b;
}

std::string first_difference(const Bytes& got, const Bytes& expected, DType dtype) {
  if (got.size() != expected.size())
    return fmt::format("size {} bytes, expected {}", got.size(), expected.size());
  const size_t n = got.size() / dtype_size(dtype);
  const size_t es = dtype_size(dtype);
  for (size_t i = 0; i < n; ++i) {
    if (std::equal(got.begin() + long(i * es), got.begin() + long((i + 1) * es),
                   expected.begin() + long(i * es)))
      continue;
    return fmt::format("element {} of {}: got {} expected {}", i, n, element(got, i, dtype),
                       element(expected, i, dtype));
  }
  return {};
}

std::string sum_difference(const Bytes& got, const Bytes& expected, DType dtype, int world, size_t first_index) {
  if (got.size() != expected.size()) return first_difference(got, expected, dtype);
  const size_t n = expected.size() / dtype_size(dtype);
  std::vector<float> g(n), e(n);
  to_f32(dtype, got.data(), g.data(), n);
  to_f32(dtype, expected.data(), e.data(), n);
  const float eps = dtype == DType::F32 ? 0x1p-23f : dtype == DType::BF16 ? 0x1p-7f : 0x1p-10f;
  for (size_t i = 0; i < n; ++i) {
    float magnitude = 0;
    for (int r = 0; r < world; ++r) magnitude += std::fabs(input_value(r, first_index + i, dtype));
    if (!(std::fabs(g[i] - e[i]) <= 2.0f * float(world) * eps * magnitude))
      return fmt::format("element {}: got {} expected {}", i, g[i], e[i]);
  }
  return {};
}

}  // namespace zt::test
