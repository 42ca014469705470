#include "data/file_token_dataset.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>
#include <vector>

#include "core/error.hpp"
#include "data/llmc_format.hpp"
#include "data/sample_index.hpp"
#include "data/token_file_info.hpp"

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

namespace {

// The largest of the raw tokens, over the file a chunk at a time: a plain loop the compiler
// vectorises, so that a file of billions of tokens is checked at the speed it is read.
template <typename Token>
uint32_t largest_token(const ReadOnlyFile& file, size_t header_bytes, int64_t count) {
  constexpr int64_t kChunk = 1 << 19;
  std::vector<Token> chunk(size_t(std::min(kChunk, count)));
  Token largest = 0;
  for (int64_t first = 0; first < count; first += kChunk) {
    const int64_t n = std::min(kChunk, count - first);
    file.read(header_bytes + uint64_t(first) * sizeof(Token), size_t(n) * sizeof(Token), chunk.data());
    for (int64_t i = 0; i < n; ++i) largest = std::max(largest, chunk[size_t(i)]);
  }
  return largest;
}

}  // namespace

FileTokenDataset::FileTokenDataset(ReadOnlyFile file, TokenFormat format, size_t header_bytes, int token_bytes)
    : file_(std::move(file)), format_(format), header_bytes_(header_bytes), token_bytes_(token_bytes) {
  count_ = int64_t((file_.size() - header_bytes_) / size_t(token_bytes_));
  if (count_ == 0) fail("{}: the file holds no tokens", file_.path());
  if (format_ == TokenFormat::Text) {
    vocab_size_ = 256;
  } else if (token_bytes_ == 2) {
    vocab_size_ = int(largest_token<uint16_t>(file_, header_bytes_, count_)) + 1;
  } else {
    const uint32_t largest = largest_token<uint32_t>(file_, header_bytes_, count_);
    if (largest >= uint32_t(INT32_MAX)) {
      scan([&](int64_t first, const int32_t* tokens, int64_t n) {
        for (int64_t i = 0; i < n; ++i)
          if (uint32_t(tokens[i]) == largest)
            fail("{}: token {} at index {} (byte offset {}) is beyond any vocabulary", file_.path(), largest, first + i,
                 byte_offset(first + i));
      });
    }
    vocab_size_ = int(largest) + 1;
  }
}

namespace {

struct LlmcHeader {
  int token_bytes;
  int64_t count;
};

// The header of an llm.c token file, checked against the file's size.
LlmcHeader read_llmc_header(const ReadOnlyFile& file) {
  const std::string& path = file.path();
  if (file.size() < llmc::kHeaderBytes)
    fail("{}: {} bytes is too small for an llm.c token file (the header alone is {} bytes)", path, file.size(),
         llmc::kHeaderBytes);
  int32_t header[3];
  file.read(0, sizeof(header), header);
  if (header[0] != llmc::kMagic16 && header[0] != llmc::kMagic32)
    fail("{}: bad llm.c magic {} (expected {} or {})", path, header[0], llmc::kMagic16, llmc::kMagic32);
  const int token_bytes = llmc::token_bytes_of(header[0], header[1]);
  if (token_bytes == 0)
    fail("{}: unsupported llm.c version {} with magic {} (zerotrain reads magic {} version {}, uint16 tokens, and "
         "magic {} version {}, uint32 tokens)",
         path, header[1], header[0], llmc::kMagic16, llmc::kVersion16, llmc::kMagic32, llmc::kVersion32);
  if (header[2] < 0) fail("{}: negative token count {} in the llm.c header", path, header[2]);
  const uint64_t expected = llmc::kHeaderBytes + uint64_t(token_bytes) * uint64_t(header[2]);
  if (file.size() != expected)
    fail("{}: size mismatch: the llm.c header says {} tokens of {} bytes, so {} bytes are expected, but the file "
         "has {}",
         path, header[2], token_bytes, expected, file.size());
  if (header[2] == 0) fail("{}: the file holds no tokens", path);
  return {token_bytes, header[2]};
}

}  // namespace

std::unique_ptr<FileTokenDataset> FileTokenDataset::open_llmc(const std::string& path) {
  ReadOnlyFile file(path);
  const LlmcHeader header = read_llmc_header(file);
  std::unique_ptr<FileTokenDataset> d(
      new FileTokenDataset(std::move(file), TokenFormat::LlmC, llmc::kHeaderBytes, header.token_bytes));
  d->open_loss_mask(llmc::mask_path_of(path));
  d->open_sample_index(path);
  return d;
}

int64_t FileTokenDataset::count_tokens(const std::string& path, TokenFormat format) {
  const ReadOnlyFile file(path);
  int64_t count = 0;
  if (format == TokenFormat::LlmC) {
    count = read_llmc_header(file).count;
  } else if (format == TokenFormat::Uint16) {
    if (file.size() % 2 != 0) fail("{}: odd size {} bytes for a file of uint16 tokens", path, file.size());
    count = int64_t(file.size() / 2);
  } else if (format == TokenFormat::Text) {
    count = int64_t(file.size());
  } else {
    fail("{}: not a token file format: {}", path, token_format_name(format));
  }
  if (count == 0) fail("{}: the file holds no tokens", path);
  return count;
}

void FileTokenDataset::open_loss_mask(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return;
  ReadOnlyFile file(path);
  int32_t header[3] = {};
  if (file.size() >= llmc::kHeaderBytes) file.read(0, sizeof(header), header);
  if (file.size() < llmc::kHeaderBytes || header[0] != llmc::kMaskMagic || header[1] != llmc::kMaskVersion)
    fail("{}: not a loss mask (expected the header magic {} version {}), yet it lies beside the token file {}", path,
         llmc::kMaskMagic, llmc::kMaskVersion, file_.path());
  if (header[2] != count_)
    fail("{}: the loss mask is for {} tokens, but {} holds {}: it belongs to another token file", path, header[2],
         file_.path(), count_);
  if (file.size() != llmc::kHeaderBytes + uint64_t(count_))
    fail("{}: size mismatch: {} bytes expected for a mask of {} tokens, the file has {}", path,
         llmc::kHeaderBytes + uint64_t(count_), count_, file.size());
  constexpr int64_t kChunk = 1 << 20;
  std::vector<uint8_t> chunk(size_t(std::min(kChunk, count_)));
  for (int64_t first = 0; first < count_; first += kChunk) {
    const int64_t n = std::min(kChunk, count_ - first);
    file.read(llmc::kHeaderBytes + uint64_t(first), size_t(n), chunk.data());
    for (int64_t i = 0; i < n; ++i)
      if (chunk[size_t(i)] > 1)
        fail("{}: value {} for token {} (byte offset {}): a loss mask holds 0 or 1", path, chunk[size_t(i)], first + i,
             llmc::kHeaderBytes + uint64_t(first + i));
  }
  mask_ = std::move(file);
}

void FileTokenDataset::open_sample_index(const std::string& token_path) {
  const std::string path = llmc::index_path_of(token_path);
  std::error_code ec;
  const bool present = std::filesystem::exists(path, ec);
  const std::optional<TokenFileInfo> info = read_token_file_info(token_path, count_);
  if (info && !info->sample_index.empty() && !present)
    fail("{} names the sample index {}, which is missing beside {}: tokenize again", llmc::info_path_of(token_path),
         info->sample_index, token_path);
  if (!present) return;
  sample_offsets_ = read_sample_index(path, token_path, count_, &pairs_);
  if (info && !info->sample_index.empty() && info->samples != samples())
    fail("{}: {} samples, but {} records {}: they belong to different files; tokenize again", path, samples(),
         llmc::info_path_of(token_path), info->samples);
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
  } else if (token_bytes_ == 2) {
    for (int64_t i = 0; i < count; ++i) {
      uint16_t t;
      std::memcpy(&t, raw + 2 * i, 2);
      out[i] = t;
    }
  }  // 4-byte tokens are already in place
}

void FileTokenDataset::read_loss_mask(int64_t begin, int64_t count, uint8_t* out) const {
  if (!mask_) return TokenDataset::read_loss_mask(begin, count, out);
  if (begin < 0 || count < 0 || begin + count > count_)
    fail("{}: read of the mask of tokens [{}, {}) outside the file's {} tokens", mask_->path(), begin, begin + count,
         count_);
  mask_->read(llmc::kHeaderBytes + uint64_t(begin), size_t(count), out);
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
