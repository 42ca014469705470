#include "train/crc32c.hpp"

namespace zt {

// Bit at a time: event files take a few records per step, so speed does not matter here.
uint32_t crc32c(const void* data, size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i) {
    crc ^= bytes[i];
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return crc ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(const void* data, size_t size) {
  const uint32_t crc = crc32c(data, size);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

}  // namespace zt
