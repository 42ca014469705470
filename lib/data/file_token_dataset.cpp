#include "data/file_token_dataset.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <vector>

#include "core/error.hpp"

namespace zt {

static_assert(std::endian::native == std::endian::little, "token files are little-endian");

template <typename F>
void FileTokenDataset::scan(F&& f) const {
  constexpr int64_t kChunk = 1 << 18;  // tokens
  std::vector<int32_t> tokens(size_t(std::min(kChunk, count_)));
  for (int64_t first = 0; first < count_; first += kChunk) {
    const int64_t n = std::min(kChunk, count_ - first);
    read(first, n, tokens.data());
    f(first, tokens.data(), n);
  }
}

FileTokenDataset::FileTokenDataset(ReadOnlyFile file, TokenFormat format, size_t header_bytes,
                                   int token_bytes)
    : file_(std::move(file)), format_(format), header_bytes_(header_bytes), token_bytes_(token_bytes) {
  count_ = int64_t((file_.size() - header_bytes_) / size_t(token_bytes_));
  if (count_ == 0) fail("{}: the file holds no tokens", file_.path());
  if (format_ == TokenFormat::Text) {
    vocab_size_ = 256;
  } else {
    // The largest token, over the raw 16-bit values: a plain loop the compiler vectorises, so that
    // a file of billions of tokens is checked at the speed it is read.
    constexpr int64_t kChunk = 1 << 19;
    std::vector<uint16_t> chunk(size_t(std::min(kChunk, count_)));
    uint16_t max_token = 0;
    for (int64_t first = 0; first < count_; first += kChunk) {
      const int64_t n = std::min(kChunk, count_ - first);
      file_.read(byte_offset(first), size_t(n) * 2, chunk.data());
      for (int64_t i = 0; i < n; ++i) max_token = std::max(max_token, chunk[size_t(i)]);
    }
    vocab_size_ = int(max_token) + 1;
  }
}

std::unique_ptr<FileTokenDataset> FileTokenDataset::open_llmc(const std::string& path) {
  ReadOnlyFile file(path);
  if (file.size() < kLlmcHeaderBytes)
    fail("{}: {} bytes is too small for an llm.c token file (the header alone is {} bytes)", path,
         file.size(), kLlmcHeaderBytes);
  int32_t header[3];
  file.read(0, sizeof(header), header);
  if (header[0] != kLlmcMagic)
    fail("{}: bad llm.c magic {} (expected {})", path, header[0], kLlmcMagic);
  if (header[1] != kLlmcVersion)
    fail("{}: unsupported llm.c version {} (only version {}, uint16 GPT-2 tokens, is supported)", path,
         header[1], kLlmcVersion);
  if (header[2] < 0) fail("{}: negative token count {} in the llm.c header", path, header[2]);
  const uint64_t expected = kLlmcHeaderBytes + 2 * uint64_t(header[2]);
  if (file.size() != expected)
    fail("{}: size mismatch: the llm.c header says {} tokens, so {} bytes are expected, but the file has {}",
         path, header[2], expected, file.size());
  return std::unique_ptr<FileTokenDataset>(
      new FileTokenDataset(std::move(file), TokenFormat::LlmC, kLlmcHeaderBytes, 2));
}

std::unique_ptr<FileTokenDataset> FileTokenDataset::open_uint16(const std::string& path) {
  ReadOnlyFile file(path);
  if (file.size() % 2 != 0)
    fail("{}: odd size {} bytes for a file of uint16 tokens", path, file.size());
  return std::unique_ptr<FileTokenDataset>(new FileTokenDataset(std::move(file), TokenFormat::Uint16, 0, 2));
}

std::unique_ptr<FileTokenDataset> FileTokenDataset::open_text(const std::string& path) {
  ReadOnlyFile file(path);
  return std::unique_ptr<FileTokenDataset>(new FileTokenDataset(std::move(file), TokenFormat::Text, 0, 1));
}

void FileTokenDataset::read(int64_t begin, int64_t count, int32_t* out) const {
  if (begin < 0 || count < 0 || begin + count > count_)
    fail("{}: read of tokens [{}, {}) outside the file's {} tokens", file_.path(), begin, begin + count,
         count_);
  if (count == 0) return;
  // The bytes land in the upper part of `out` and widen in place, front to back: token i's bytes
  // lie at or after out[i], so each is read before it is overwritten.
  const size_t bytes = size_t(count) * size_t(token_bytes_);
  auto* raw = reinterpret_cast<uint8_t*>(out) + size_t(count) * sizeof(int32_t) - bytes;
  file_.read(byte_offset(begin), bytes, raw);
  if (token_bytes_ == 1) {
    for (int64_t i = 0; i < count; ++i) out[i] = raw[i];
  } else {
    for (int64_t i = 0; i < count; ++i) {
      uint16_t t;
      std::memcpy(&t, raw + 2 * i, 2);
      out[i] = t;
    }
  }
}

void FileTokenDataset::check_vocab(int model_vocab) const {
  if (vocab_size_ <= model_vocab) return;
  scan([&](int64_t first, const int32_t* tokens, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
      if (tokens[i] >= model_vocab)
        fail("{}: token {} at index {} (byte offset {}) is outside the model's vocabulary of {} tokens",
             file_.path(), tokens[i], first + i, byte_offset(first + i), model_vocab);
  });
}

}  // namespace zt
