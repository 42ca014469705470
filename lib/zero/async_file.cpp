#include "zero/async_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"

namespace zt {

struct AsyncFile::Ticket::State {
  std::mutex mutex;
  std::condition_variable done_cv;
  size_t pieces_left = 0;
  std::string error;  // the first piece's failure
};

void AsyncFile::Ticket::wait() {
  if (!state_) return;
  std::unique_lock lock(state_->mutex);
  state_->done_cv.wait(lock, [&] { return state_->pieces_left == 0; });
  if (!state_->error.empty()) throw Error(state_->error);
}

AsyncFile::AsyncFile(const std::string& dir, const std::string& name, uint64_t bytes, const AioOptions& options,
                     const std::string& what, bool direct)
    : what_(what), size_(direct_aligned(bytes)), options_(options) {
  path_ = (std::filesystem::path(dir) / name).string();
  options_.block_size = std::max<size_t>(kDirectAlignment, options_.block_size / kDirectAlignment * kDirectAlignment);
  options_.queue_depth = std::max(1, options_.queue_depth);
  options_.threads = std::max(1, options_.threads);
  // Direct I/O where asked for and the filesystem takes it (tmpfs does not).
  if (direct) fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0600);
  direct_ = fd_ >= 0;
  if (fd_ < 0) fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd_ < 0) fail("{}: cannot create \"{}\": {}", what_, path_, std::strerror(errno));
  ::unlink(path_.c_str());  // scratch: gone with the process, whatever way it ends
  struct statvfs fs {};
  if (::fstatvfs(fd_, &fs) == 0 && uint64_t(fs.f_bavail) * fs.f_frsize < size_) {
    const double need = double(size_) / 1048576.0, free = double(uint64_t(fs.f_bavail) * fs.f_frsize) / 1048576.0;
    ::close(fd_);
    fail("{}: \"{}\" has {:.1f} MiB free, offloaded state needs {:.1f} MiB", what_, dir, free, need);
  }
  if (const int err = ::posix_fallocate(fd_, 0, off_t(size_)); err != 0) {
    ::close(fd_);
    fail("{}: cannot reserve {:.1f} MiB in \"{}\": {}", what_, double(size_) / 1048576.0, dir, std::strerror(err));
  }
  for (int i = 0; i < options_.threads; ++i) threads_.emplace_back([this] { worker(); });
}

AsyncFile::~AsyncFile() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  for (auto& t : threads_) t.join();
  if (fd_ >= 0) ::close(fd_);
}

AsyncFile::Ticket AsyncFile::read(uint64_t offset, void* dst, size_t bytes) {
  return submit(false, offset, static_cast<char*>(dst), bytes);
}

AsyncFile::Ticket AsyncFile::write(uint64_t offset, const void* src, size_t bytes) {
  return submit(true, offset, const_cast<char*>(static_cast<const char*>(src)), bytes);
}

AsyncFile::Ticket AsyncFile::submit(bool write, uint64_t offset, char* data, size_t bytes) {
  if (offset + bytes > size_)
    fail("{}: {} of {} bytes at offset {} is past the end of \"{}\" ({} bytes)", what_, write ? "write" : "read",
         bytes, offset, path_, size_);
  if (direct_ && (offset % kDirectAlignment || bytes % kDirectAlignment ||
                  reinterpret_cast<uintptr_t>(data) % kDirectAlignment))
    fail("{}: direct I/O on \"{}\" needs 4096-byte aligned offsets, sizes and buffers", what_, path_);
  Ticket t;
  t.state_ = std::make_shared<Ticket::State>();
  t.state_->pieces_left = (bytes + options_.block_size - 1) / options_.block_size;
  for (size_t done = 0; done < bytes; done += options_.block_size) {
    std::unique_lock lock(mutex_);
    // At most queue_depth pieces queued or in flight: the caller waits for room, as aio does.
    room_cv_.wait(lock, [&] { return queue_.size() + size_t(in_flight_) < size_t(options_.queue_depth); });
    queue_.push_back({t.state_, write, offset + done, data + done, std::min(options_.block_size, bytes - done)});
    lock.unlock();
    queue_cv_.notify_one();
  }
  return t;
}

void AsyncFile::worker() {
  std::unique_lock lock(mutex_);
  for (;;) {
    queue_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping with nothing left
    Piece p = queue_.front();
    queue_.pop_front();
    ++in_flight_;
    lock.unlock();
    run(p);
    lock.lock();
    --in_flight_;
    room_cv_.notify_all();
  }
}

void AsyncFile::run(const Piece& p) {
  std::string error;
  {
    const auto t0 = std::chrono::steady_clock::now();
    struct Busy {  // counted however the request ends, and before its ticket says it is done
      std::atomic<int64_t>& ns;
      std::chrono::steady_clock::time_point t0;
      ~Busy() {
        ns += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
      }
    } busy{busy_ns_, t0};
    size_t done = 0;
    while (done < p.bytes) {
      const ssize_t n = p.write ? ::pwrite(fd_, p.data + done, p.bytes - done, off_t(p.offset + done))
                                : ::pread(fd_, p.data + done, p.bytes - done, off_t(p.offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error = fmt::format("{}: {} of \"{}\" at byte {} failed: {}", what_, p.write ? "write" : "read", path_,
                            p.offset + done, n < 0 ? std::strerror(errno) : "unexpected end of file");
        break;
      }
      done += size_t(n);
    }
  }
  std::lock_guard lock(p.ticket->mutex);
  if (!error.empty() && p.ticket->error.empty()) p.ticket->error = error;
  if (--p.ticket->pieces_left == 0) p.ticket->done_cv.notify_all();
}

}  // namespace zt
