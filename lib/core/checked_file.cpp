#include "core/checked_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>

#include "core/error.hpp"
#include "core/file_type.hpp"

namespace zt {

namespace {

std::string prefix(const std::string& label) { return label.empty() ? "" : label + ": "; }

}  // namespace

CheckedFile::CheckedFile(std::string path, Mode mode, std::string label)
    : path_(std::move(path)), label_(std::move(label)) {
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode))
    fail("{}'{}' is {} (expected a file to write, or a character device such as /dev/null)", prefix(label_), path_,
         file_type_name(st.st_mode));
  // O_APPEND in both modes: after a failed record the file is cut back and writing goes on at its end.
  const int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY | (mode == Mode::Truncate ? O_TRUNC : 0);
  fd_ = UniqueFd(::open(path_.c_str(), flags, 0666));
  if (fd_.get() < 0) fail("{}cannot open '{}' for writing: {}", prefix(label_), path_, std::strerror(errno));
  if (::fstat(fd_.get(), &st) == 0 && S_ISREG(st.st_mode)) {
    regular_ = true;
    size_ = st.st_size;
  }
}

void CheckedFile::fail_write(int error, const char* what) {
  // Whole records only: what reached the file of this one goes. Shrinking needs no space.
  if (regular_) (void)!::ftruncate(fd_.get(), size_);
  fail("{}cannot {} '{}': {}", prefix(label_), what, path_, std::strerror(error));
}

void CheckedFile::write(std::string_view record) {
  if (fd_.get() < 0) return;
  const char* p = record.data();
  size_t left = record.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_.get(), p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail_write(n < 0 ? errno : ENOSPC, "write");
    p += n;
    left -= size_t(n);
  }
  size_ += off_t(record.size());
}

void CheckedFile::sync() {
  if (fd_.get() >= 0 && regular_ && ::fsync(fd_.get()) != 0) fail_write(errno, "write");
}

void CheckedFile::close() {
  if (fd_.get() < 0) return;
  const int fd = fd_.release();
  if (::close(fd) != 0 && errno != EINTR) fail("{}cannot write '{}': {}", prefix(label_), path_, std::strerror(errno));
}

void write_file_atomically(const std::string& path, const std::string& label,
                           const std::function<void(CheckedFile&)>& write) {
  const std::string tmp = path + ".tmp";
  try {
    CheckedFile file(tmp, CheckedFile::Mode::Truncate, "");
    write(file);
    file.sync();
    file.close();
    if (::rename(tmp.c_str(), path.c_str()) != 0)
      fail("cannot rename '{}' to '{}': {}", tmp, path, std::strerror(errno));
  } catch (const std::exception& e) {
    const bool removed = ::unlink(tmp.c_str()) == 0;
    fail("{}{} (nothing written to '{}'{})", prefix(label), e.what(), path,
         removed ? "; the partial file was removed" : "");
  }
  // The rename itself survives a crash once the directory is on disk too.
  auto dir = std::filesystem::path(path).parent_path();
  const int dir_fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    (void)::fsync(dir_fd);
    ::close(dir_fd);
  }
}

}  // namespace zt
