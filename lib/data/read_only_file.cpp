#include "data/read_only_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/error.hpp"
#include "core/file_type.hpp"

namespace zt {

ReadOnlyFile::ReadOnlyFile(const std::string& path) : path_(path) {
  std::string why;
  int error = 0;
  fd_ = UniqueFd(open_regular_file(path, why, error));
  if (fd_.get() < 0) {
    if (error == ENOENT) fail("{}: data file not found", path);
    fail("{}: cannot open data file: {}", path, why);
  }
  struct stat st {};
  if (::fstat(fd_.get(), &st) != 0) fail("{}: cannot read data file: {}", path, std::strerror(errno));
  size_ = size_t(st.st_size);
}

ReadOnlyFile::ReadOnlyFile(ReadOnlyFile&& other) noexcept { *this = std::move(other); }

ReadOnlyFile& ReadOnlyFile::operator=(ReadOnlyFile&& other) noexcept {
  if (this != &other) {
    path_ = std::move(other.path_);
    fd_ = std::move(other.fd_);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void ReadOnlyFile::read(uint64_t offset, size_t n, void* out) const {
  auto* dst = static_cast<char*>(out);
  size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd_.get(), dst + done, n - done, off_t(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0)
      fail("{}: cannot read bytes [{}, {}) of the data file: {}", path_, offset, offset + n, std::strerror(errno));
    if (got == 0) {
      struct stat st {};
      const long long now = ::fstat(fd_.get(), &st) == 0 ? (long long)st.st_size : (long long)(offset + done);
      fail("{}: the data file shrank while training read it ({} bytes when opened, {} now; bytes [{}, {}) are "
           "gone): was it truncated or rewritten by another program?",
           path_, size_, now, offset, offset + n);
    }
    done += size_t(got);
  }
}

}  // namespace zt
