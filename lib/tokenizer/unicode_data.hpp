#pragma once
// Unicode character data (generated into unicode_data.cpp by scripts/make_unicode_tables.py).
// unicode.hpp is the interface the tokenizer uses; these are its raw tables.
#include <cstddef>
#include <cstdint>

namespace zt::unicode_data {

struct Decomposition {
  uint32_t code_point;
  uint16_t first, length;  // kDecomposed[first, first + length)
};
struct Composition {
  uint32_t first, second, composite;
};

extern const char* const kUnicodeVersion;
extern const uint32_t kFlagRuns[];
extern const size_t kFlagRunCount;
extern const uint32_t kCombiningClassRuns[];
extern const size_t kCombiningClassRunCount;
extern const Decomposition kDecompositions[];
extern const size_t kDecompositionCount;
extern const uint32_t kDecomposed[];
extern const Composition kCompositions[];
extern const size_t kCompositionCount;

}  // namespace zt::unicode_data
