#include "data/sample_index.hpp"

#include <bit>

#include "core/error.hpp"
#include "data/llmc_format.hpp"
#include "data/read_only_file.hpp"

namespace zt {

static_assert(std::endian::native == std::endian::little, "sample indexes are little-endian");

std::array<int32_t, 256> sample_index_header(int64_t samples, int64_t tokens) {
  if (samples < 0 || samples > llmc::kMaxTokens || tokens < 0 || tokens > llmc::kMaxTokens)
    fail("sample index: {} samples of {} tokens do not fit its header", samples, tokens);
  std::array<int32_t, 256> header{};
  header[0] = llmc::kIndexMagic;
  header[1] = llmc::kIndexVersion;
  header[2] = int32_t(samples);
  header[3] = int32_t(tokens);
  return header;
}

void check_sample_offsets(std::span<const int64_t> offsets, int64_t tokens, const std::string& where) {
  if (offsets.size() < 2) fail("{}: no sample", where);
  if (offsets.front() != 0) fail("{}: the first sample starts at token {}, not 0", where, offsets.front());
  for (size_t k = 1; k < offsets.size(); ++k) {
    if (uint64_t(offsets[k]) > uint64_t(tokens))
      fail("{}: entry {} (byte offset {}) is {}, beyond the {} tokens of the token file", where, k,
           llmc::kHeaderBytes + k * sizeof(uint64_t), uint64_t(offsets[k]), tokens);
    if (offsets[k] <= offsets[k - 1])
      fail("{}: entry {} (byte offset {}) is {}, not above the entry before it ({}): a sample holds at least one "
           "token",
           where, k, llmc::kHeaderBytes + k * sizeof(uint64_t), offsets[k], offsets[k - 1]);
  }
  if (offsets.back() != tokens)
    fail("{}: the last sample ends at token {}, but the token file holds {}: the index belongs to another file", where,
         offsets.back(), tokens);
}

std::vector<int64_t> read_sample_index(const std::string& index_path, const std::string& token_path, int64_t tokens,
                                       bool* pairs) {
  ReadOnlyFile file(index_path);
  int32_t header[4] = {};
  if (file.size() >= llmc::kHeaderBytes) file.read(0, sizeof(header), header);
  const bool of_pairs = header[0] == llmc::kPairIndexMagic;
  if (file.size() < llmc::kHeaderBytes || (header[0] != llmc::kIndexMagic && !of_pairs) ||
      header[1] != llmc::kIndexVersion)
    fail("{}: not a sample index (expected the header magic {}, or {} for preference pairs, version {}), yet it lies "
         "beside the token file {}",
         index_path, llmc::kIndexMagic, llmc::kPairIndexMagic, llmc::kIndexVersion, token_path);
  if (header[3] != tokens)
    fail("{}: the sample index is for {} tokens, but {} holds {}: it belongs to another token file", index_path,
         header[3], token_path, tokens);
  const int64_t samples = header[2];
  const uint64_t expected = llmc::kHeaderBytes + uint64_t(samples + 1) * sizeof(uint64_t);
  if (samples < 1 || file.size() != expected)
    fail("{}: size mismatch: {} samples need {} bytes, the file has {}", index_path, samples, expected, file.size());
  std::vector<int64_t> offsets(size_t(samples) + 1);
  file.read(llmc::kHeaderBytes, offsets.size() * sizeof(uint64_t), offsets.data());
  check_sample_offsets(offsets, tokens, index_path);
  if (of_pairs && samples % 2 != 0)
    fail("{}: an index of preference pairs holds {} samples, an odd number: each pair is two samples (prompt + "
         "chosen, prompt + rejected)",
         index_path, samples);
  if (pairs) *pairs = of_pairs;
  return offsets;
}

}  // namespace zt
