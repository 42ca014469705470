#pragma once
// Where the samples of a token file of record data start (docs/data.md, "Samples"): X.idx beside
// X.bin (llmc::index_path_of), written by `zerotrain tokenize` for conversations. A header of 256
// little-endian int32 as llm.c's files have (magic 20240524, version 1, the number of samples S,
// the number of tokens N, the rest 0), then S + 1 little-endian uint64 offsets: sample k is tokens
// [offset k, offset k + 1) of X.bin; the first offset is 0, they increase, the last is N. In numpy:
//   offsets = numpy.fromfile("X.idx", dtype=numpy.uint64, offset=1024)
// Preference data (docs/data.md, "Preference pairs") has the same index with magic 20240525 and S
// even: sample 2i is prompt i + chosen i, sample 2i + 1 prompt i + rejected i, the loss mask 1 on the
// completions' tokens.
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace zt {

namespace llmc {
constexpr int32_t kIndexMagic = 20240524, kIndexVersion = 1;
constexpr int32_t kPairIndexMagic = 20240525;
}

// The header of an index of `samples` samples over `tokens` tokens.
std::array<int32_t, 256> sample_index_header(int64_t samples, int64_t tokens);

// The S + 1 offsets of the index at `index_path`, checked against the token file it lies beside
// (`token_path`, `tokens` tokens): one zt::Error naming the file and what is wrong (a header of
// another magic, another token count, a size that does not match, an offset out of order with its
// entry number and byte offset; an odd number of samples in an index of pairs). `pairs`, when
// given, says whether the index is one of pairs.
std::vector<int64_t> read_sample_index(const std::string& index_path, const std::string& token_path, int64_t tokens,
                                       bool* pairs = nullptr);

// Checks offsets as read_sample_index does (for offsets made in memory); `where` names them.
void check_sample_offsets(std::span<const int64_t> offsets, int64_t tokens, const std::string& where);

}  // namespace zt
