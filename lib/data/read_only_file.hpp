#pragma once
// A data file read with pread(). Token files can be gigabytes and the sampler reads windows at
// random positions, so the page cache does the buffering. The file is not memory-mapped: a mapped
// file that shrinks under the run (truncated, or rewritten by another program) kills the process
// with SIGBUS at the next access to a vanished page; a read past the new end is an error naming
// the file instead.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/unique_fd.hpp"

namespace zt {

class ReadOnlyFile {
public:
  ReadOnlyFile() = default;
  // Throws zt::Error naming the path when it is missing ("data file not found"), unreadable (with
  // the reason) or not a regular file (a FIFO is refused without blocking).
  explicit ReadOnlyFile(const std::string& path);
  ReadOnlyFile(const ReadOnlyFile&) = delete;
  ReadOnlyFile& operator=(const ReadOnlyFile&) = delete;
  ReadOnlyFile(ReadOnlyFile&& other) noexcept;
  ReadOnlyFile& operator=(ReadOnlyFile&& other) noexcept;

  size_t size() const { return size_; }  // when opened
  const std::string& path() const { return path_; }

  // Copies bytes [offset, offset + n) to out. The file must still hold them: one that has shrunk
  // since it was opened is an error naming it and both sizes.
  void read(uint64_t offset, size_t n, void* out) const;

private:
  std::string path_;
  UniqueFd fd_;
  size_t size_ = 0;
};

}  // namespace zt
