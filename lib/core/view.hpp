#pragma once
// A typed view: where some elements are, in which dtype and memory space. The engine hands the
// model its parameters and gradient buffers as views, so a bf16 model on a GPU reads bf16 weights
// where they are stored and a CPU model computing in fp32 gets fp32 values.
#include <cstddef>

#include "core/device.hpp"
#include "core/dtype.hpp"

namespace zt {

struct ConstView {
  const void* data = nullptr;
  DType dtype = DType::F32;
  MemSpace space = MemSpace::Device;

  // The view of element `elements` onwards.
  ConstView at(size_t elements) const {
    return {static_cast<const char*>(data) + elements * dtype_size(dtype), dtype, space};
  }
};

struct View {
  void* data = nullptr;
  DType dtype = DType::F32;
  MemSpace space = MemSpace::Device;

  View at(size_t elements) const { return {static_cast<char*>(data) + elements * dtype_size(dtype), dtype, space}; }
  operator ConstView() const { return {data, dtype, space}; }
};

}  // namespace zt
