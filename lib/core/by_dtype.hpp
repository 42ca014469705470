#pragma once
// One of three values by element type, as each file format names fp32, bf16 and fp16; `other`
// for a value outside the enum.
#include "core/dtype.hpp"

namespace zt {

template <class T>
constexpr T by_dtype(DType t, T f32, T bf16, T f16, T other) {
  switch (t) {
    case DType::F32: return f32;
    case DType::BF16: return bf16;
    case DType::F16: return f16;
  }
  return other;
}

}  // namespace zt
