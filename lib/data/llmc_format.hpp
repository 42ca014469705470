#pragma once
// llm.c's token files and the loss mask zerotrain writes beside them.
//
// A token file is a header of 256 little-endian int32 (magic, version, token count, the rest 0)
// followed by the tokens, as llm.c's dev/data/data_common.py writes them:
//   magic 20240520, version 1: uint16 tokens (GPT-2)
//   magic 20240801, version 7: uint32 tokens (Llama 3: vocabularies above 65,536)
// A loss mask (chat data: which tokens are the answers the loss is taken on) lies beside it, X.mask
// for X.bin (NAME.mask for a NAME without .bin): the same header with magic 20240523, version 1
// and the token count, then one byte per token: 1 where the token counts as a target, 0 where it
// does not (prompts, separators).
// Record data (conversations) keeps where each sample starts in X.idx (data/sample_index.hpp).
#include <cstddef>
#include <cstdint>
#include <string>

namespace zt::llmc {

constexpr int32_t kMagic16 = 20240520, kVersion16 = 1;
constexpr int32_t kMagic32 = 20240801, kVersion32 = 7;
constexpr int32_t kMaskMagic = 20240523, kMaskVersion = 1;
constexpr size_t kHeaderInts = 256;
constexpr size_t kHeaderBytes = kHeaderInts * sizeof(int32_t);
constexpr int64_t kMaxTokens = 0x7FFFFFFF;  // the count is an int32

// Bytes per token of a header's (magic, version), or 0 when zerotrain does not read it.
inline int token_bytes_of(int32_t magic, int32_t version) {
  if (magic == kMagic16 && version == kVersion16) return 2;
  if (magic == kMagic32 && version == kVersion32) return 4;
  return 0;
}

// The mask file that belongs to a token file: X.bin -> X.mask, anything else -> NAME.mask.
std::string mask_path_of(const std::string& token_path);
// What zerotrain records of a token file beside it (data/token_file_info.hpp): X.bin ->
// X.meta.json, anything else -> NAME.meta.json.
std::string info_path_of(const std::string& token_path);
// The sample index of a token file of record data (data/sample_index.hpp): X.bin -> X.idx,
// anything else -> NAME.idx.
std::string index_path_of(const std::string& token_path);

}  // namespace zt::llmc
