#pragma once
// CRC-32C (Castagnoli), the checksum of TFRecord framing: reflected polynomial 0x82F63B78, initial
// value and final xor 0xFFFFFFFF (crc32c("123456789") = 0xE3069283).
#include <cstddef>
#include <cstdint>

namespace zt {

uint32_t crc32c(const void* data, size_t size);

// The "masked" CRC TFRecord stores, so that a CRC of data holding CRCs stays well mixed.
uint32_t masked_crc32c(const void* data, size_t size);

}  // namespace zt
