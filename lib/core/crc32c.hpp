#pragma once
// CRC-32C (Castagnoli): reflected polynomial 0x82F63B78, initial value and final xor 0xFFFFFFFF
// (crc32c("123456789") = 0xE3069283). The checksum of checkpoint files and of TFRecord framing.
// Uses the SSE 4.2 crc32 instruction where the CPU has it (several GB/s), else tables.
#include <cstddef>
#include <cstdint>

namespace zt {

// The CRC of data; with `previous` = the CRC of the bytes before, the CRC of both together, so a
// file can be checksummed chunk by chunk: crc32c(b, nb, crc32c(a, na)) == crc32c(a + b).
uint32_t crc32c(const void* data, size_t size, uint32_t previous = 0);
// The same with tables only (what crc32c uses where the instruction is missing; tests compare the two).
uint32_t crc32c_portable(const void* data, size_t size, uint32_t previous = 0);

// The "masked" CRC TFRecord stores, so that a CRC of data holding CRCs stays well mixed.
uint32_t masked_crc32c(const void* data, size_t size);

}  // namespace zt
