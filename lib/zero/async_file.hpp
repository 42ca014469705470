#pragma once
// A scratch file for offloaded state, read and written asynchronously by a pool of I/O threads
// (DeepSpeed's aio block: requests cut into block_size pieces, at most queue_depth pieces in flight,
// intra_op_parallelism threads). With `direct`, opened with O_DIRECT where the filesystem allows
// it, so that state read and written whole does not crowd the page cache; buffers, offsets and
// sizes given to it must then be multiples of kDirectAlignment (host buffers of 4 KiB or more from
// any Device are). Without, any piece at any address. The file is unlinked as soon as it is created and its space
// reserved: a crash leaves nothing behind, and a full disk is found at start-up, not mid-run.
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace zt {

struct AioOptions {
  size_t block_size = size_t(1) << 20;
  int queue_depth = 8;
  int threads = 1;
};

class AsyncFile {
public:
  static constexpr size_t kDirectAlignment = 4096;

  // Creates a file of `bytes` bytes in directory `dir` (named after `name`), reserving the space.
  // `what` names the setting in messages ("zero_optimization.offload_optimizer.nvme_path"). Throws
  // zt::Error naming the key and the path when it cannot be created or has no room.
  AsyncFile(const std::string& dir, const std::string& name, uint64_t bytes, const AioOptions& options,
            const std::string& what, bool direct);
  ~AsyncFile();
  AsyncFile(const AsyncFile&) = delete;
  AsyncFile& operator=(const AsyncFile&) = delete;

  // A request in flight; wait() returns when it is done and throws zt::Error naming the file, the
  // offset and the reason when it failed.
  class Ticket {
  public:
    Ticket() = default;
    void wait();
    bool valid() const { return state_ != nullptr; }

  private:
    friend class AsyncFile;
    struct State;
    std::shared_ptr<State> state_;
  };
  Ticket read(uint64_t offset, void* dst, size_t bytes);
  Ticket write(uint64_t offset, const void* src, size_t bytes);

  const std::string& path() const { return path_; }
  // Seconds the I/O threads spent in reads and writes, all threads together.
  double busy_seconds() const { return double(busy_ns_.load()) * 1e-9; }
  uint64_t size() const { return size_; }
  bool direct() const { return direct_; }

private:
  struct Piece {
    std::shared_ptr<Ticket::State> ticket;
    bool write;
    uint64_t offset;
    char* data;
    size_t bytes;
  };
  Ticket submit(bool write, uint64_t offset, char* data, size_t bytes);
  void worker();
  void run(const Piece& p);

  std::string path_, what_;
  uint64_t size_ = 0;
  AioOptions options_;
  int fd_ = -1;
  bool direct_ = false;
  std::mutex mutex_;
  std::condition_variable queue_cv_, room_cv_;
  std::deque<Piece> queue_;
  int in_flight_ = 0;
  bool stopping_ = false;
  std::atomic<int64_t> busy_ns_{0};
  std::vector<std::thread> threads_;
};

// Rounds up to a multiple of AsyncFile::kDirectAlignment.
inline uint64_t direct_aligned(uint64_t bytes) {
  return (bytes + AsyncFile::kDirectAlignment - 1) / AsyncFile::kDirectAlignment * AsyncFile::kDirectAlignment;
}

}  // namespace zt
