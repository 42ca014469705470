#pragma once
// A whole file mapped read-only into memory: token files can be gigabytes, and the sampler reads
// windows at random positions, so the page cache does the buffering.
#include <cstddef>
#include <cstdint>
#include <string>

namespace zt {

class MappedFile {
public:
  MappedFile() = default;
  // Throws zt::Error naming the path when it is missing, unreadable or not a regular file.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

private:
  void release();
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace zt
