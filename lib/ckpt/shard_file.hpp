#pragma once
// One rank's shard file (checkpoint_format.hpp): a safetensors file of the three fp32 tensors of
// flat elements [begin, end), checksummed with CRC32C as it is written.
#include <cstdint>
#include <string>

#include "ckpt/checkpoint_format.hpp"

namespace zt {

struct ShardWritten {
  uint64_t bytes = 0;
  uint32_t crc32c = 0;
};

// Writes PATH.tmp, fsyncs it and renames it to PATH. state[t] holds range.size() values of
// tensor t (kStateTensors order). Errors name the file and the cause.
ShardWritten write_shard_file(const std::string& path, Range range, const float* const state[3]);

// Reads the whole file and returns its size and CRC32C (an error naming the file if it cannot).
ShardWritten checksum_file(const std::string& path);

}  // namespace zt
