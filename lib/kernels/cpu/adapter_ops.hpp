#pragma once
// The elementwise pieces of LoRA adapters (model/lora.hpp) on the CPU: a scaled block of columns
// added to or written over a slice of a packed projection, and dropout by a hashed mask
// (kernels/dropout_mask.hpp). ModelOps::scale_columns and ModelOps::dropout say what they compute.
#include <cstddef>
#include <cstdint>

namespace zt::cpu {

void scale_columns(float* dst, int dst_ld, const float* src, int src_ld, int N, int width, float scale,
                   bool accumulate);
void dropout(float* out, const float* inp, size_t n, float p, uint64_t seed, bool accumulate);

}  // namespace zt::cpu
