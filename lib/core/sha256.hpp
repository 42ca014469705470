#pragma once
// SHA-256 (FIPS 180-4), the hash Hugging Face's hub and `sha256sum` show for a file: what names a
// tokenizer's files in a token file's record of the tokenizer that made it.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace zt {

class Sha256 {
public:
  Sha256();
  void update(const void* data, size_t size);
  void update(std::string_view text) { update(text.data(), text.size()); }
  // The digest as 64 lowercase hex digits; the object is spent afterwards.
  std::string hex_digest();

private:
  void compress(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> block_{};
  size_t used_ = 0;        // bytes in block_
  uint64_t total_ = 0;     // bytes hashed
};

// The SHA-256 of a file's bytes, as `sha256sum FILE` prints it. Throws zt::Error naming the file
// when it cannot be read.
std::string sha256_of_file(const std::string& path);

}  // namespace zt
