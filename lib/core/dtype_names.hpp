#pragma once
// The names of the element types (training.save_dtype, --dtype, safetensors and checkpoint files):
// fp32, bf16 and fp16, read also as float32, bfloat16 and float16. Apart from core/dtype.hpp, which
// the CUDA sources include.
#include "core/dtype.hpp"
#include "core/name_table.hpp"

namespace zt {

inline constexpr auto kDTypeNames =
    name_table<DType>({{DType::F32, "fp32"}, {DType::BF16, "bf16"}, {DType::F16, "fp16"}, {DType::F32, "float32"},
                       {DType::BF16, "bfloat16"}, {DType::F16, "float16"}});

}  // namespace zt
