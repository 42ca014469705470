#include "ckpt/synced_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"

namespace zt {

SyncedFile::SyncedFile(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("{}: cannot create: {}", path_, std::strerror(errno));
}

SyncedFile::~SyncedFile() {
  if (fd_ >= 0) ::close(fd_);
}

void SyncedFile::append(const void* data, size_t bytes) {
  write_at(end_, data, bytes);
  end_ += bytes;
}

void SyncedFile::write_at(uint64_t offset, const void* data, size_t bytes) {
  const auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    // Linux moves at most about 2 GB per call.
    const ssize_t n = ::pwrite(fd_, p, std::min<size_t>(bytes, size_t(1) << 30), off_t(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      fail("{}: write of {} bytes at offset {} failed: {}", path_, bytes, offset, std::strerror(n < 0 ? errno : EIO));
    p += n;
    bytes -= size_t(n);
    offset += uint64_t(n);
  }
}

void SyncedFile::sync() {
  if (::fsync(fd_) != 0) fail("{}: fsync failed: {}", path_, std::strerror(errno));
}

void SyncedFile::close() {
  const int fd = fd_;
  fd_ = -1;
  if (fd >= 0 && ::close(fd) != 0) fail("{}: close failed: {}", path_, std::strerror(errno));
}

void sync_directory(const std::string& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail("{}: cannot open directory to sync it: {}", dir, std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  // Some file systems cannot sync directories (EINVAL): their renames are as durable as they get.
  if (rc != 0 && err != EINVAL) fail("{}: fsync of the directory failed: {}", dir, std::strerror(err));
}

void rename_durably(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0)
    fail("{}: cannot rename {} into place: {}", to, from, std::strerror(errno));
  sync_directory(std::filesystem::path(to).parent_path().string());
}

void write_file_durably(const std::string& path, std::string_view contents) {
  const std::string tmp = path + ".tmp";
  try {
    SyncedFile out(tmp);
    out.append(contents.data(), contents.size());
    out.sync();
    out.close();
    rename_durably(tmp, path);
  } catch (...) {
    std::error_code ec;  // nothing half-written is left behind
    std::filesystem::remove(tmp, ec);
    throw;
  }
}

}  // namespace zt
