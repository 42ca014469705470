#pragma once
// One rank's shard file (checkpoint_format.hpp): a safetensors file of the three fp32 tensors of
// flat elements [begin, end), checksummed with CRC32C as it is written. Its header's metadata
// records the range, the step and the layout's CRC32C (ShardIdentity) as decimal and hex text.
#include <cstdint>
#include <map>
#include <string>

#include "ckpt/checkpoint_format.hpp"

namespace zt {

struct ShardWritten {
  uint64_t bytes = 0;
  uint32_t crc32c = 0;
};

// Writes PATH.tmp, fsyncs it and renames it to PATH. state[t] holds id.range.size() values of
// tensor t (kStateTensors order). Errors name the file and the cause.
ShardWritten write_shard_file(const std::string& path, const ShardIdentity& id, const float* const state[3]);

// The header metadata of a shard file (version 2 on): "begin", "end", "step", "layout_crc32c".
std::map<std::string, std::string> shard_metadata(const ShardIdentity& id);

// Reads the whole file and returns its size and CRC32C (an error naming the file if it cannot).
ShardWritten checksum_file(const std::string& path);

}  // namespace zt
