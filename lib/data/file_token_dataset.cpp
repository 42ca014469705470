#include "data/file_token_dataset.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#include "core/error.hpp"

namespace zt {

static_assert(std::endian::native == std::endian::little, "token files are little-endian");

FileTokenDataset::FileTokenDataset(MappedFile file, TokenFormat format, size_t header_bytes,
                                   int token_bytes)
    : file_(std::move(file)), format_(format), header_bytes_(header_bytes), token_bytes_(token_bytes) {
  count_ = int64_t((file_.size() - header_bytes_) / size_t(token_bytes_));
  if (count_ == 0) fail("{}: the file holds no tokens", file_.path());
  if (format_ == TokenFormat::Text) {
    vocab_size_ = 256;
  } else {
    const uint8_t* p = file_.data() + header_bytes_;
    uint16_t max_token = 0;
    for (int64_t i = 0; i < count_; ++i) {
      uint16_t t;
      std::memcpy(&t, p + 2 * i, 2);
      max_token = std::max(max_token, t);
    }
    vocab_size_ = int(max_token) + 1;
  }
}

std::unique_ptr<FileTokenDataset> FileTokenDataset::open_llmc(const std::string& path) {
  MappedFile file(path);
  if (file.size() < kLlmcHeaderBytes)
    fail("{}: {} bytes is too small for an llm.c token file (the header alone is {} bytes)", path,
         file.size(), kLlmcHeaderBytes);
  int32_t header[3];
  std::memcpy(header, file.data(), sizeof(header));
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
  MappedFile file(path);
  if (file.size() % 2 != 0)
    fail("{}: odd size {} bytes for a file of uint16 tokens", path, file.size());
  return std::unique_ptr<FileTokenDataset>(new FileTokenDataset(std::move(file), TokenFormat::Uint16, 0, 2));
}

std::unique_ptr<FileTokenDataset> FileTokenDataset::open_text(const std::string& path) {
  MappedFile file(path);
  return std::unique_ptr<FileTokenDataset>(new FileTokenDataset(std::move(file), TokenFormat::Text, 0, 1));
}

int32_t FileTokenDataset::token(int64_t index) const {
  const uint8_t* p = file_.data() + header_bytes_;
  if (token_bytes_ == 1) return p[index];
  uint16_t t;
  std::memcpy(&t, p + 2 * index, 2);
  return t;
}

void FileTokenDataset::read(int64_t begin, int64_t count, int32_t* out) const {
  if (begin < 0 || count < 0 || begin + count > count_)
    fail("{}: read of tokens [{}, {}) outside the file's {} tokens", file_.path(), begin, begin + count,
         count_);
  const uint8_t* p = file_.data() + header_bytes_;
  if (token_bytes_ == 1) {
    for (int64_t i = 0; i < count; ++i) out[i] = p[begin + i];
  } else {
    for (int64_t i = 0; i < count; ++i) {
      uint16_t t;
      std::memcpy(&t, p + 2 * (begin + i), 2);
      out[i] = t;
    }
  }
}

void FileTokenDataset::check_vocab(int model_vocab) const {
  if (vocab_size_ <= model_vocab) return;
  for (int64_t i = 0; i < count_; ++i) {
    int32_t t = token(i);
    if (t >= model_vocab)
      fail("{}: token {} at index {} (byte offset {}) is outside the model's vocabulary of {} tokens",
           file_.path(), t, i, byte_offset(i), model_vocab);
  }
}

}  // namespace zt
