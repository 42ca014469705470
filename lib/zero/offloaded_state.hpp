#pragma once
// Offloaded optimizer state (ZeRO-Offload, ZeRO-Infinity): the fp32 master, Adam m and v of a flat
// range, cut into sub-groups, brought into host memory one sub-group at a time for the host AdamW.
// Host: the whole state in (pinned) host memory, nothing to bring. File: a scratch file holding
// one record [master | m | v] per sub-group, with at most buffer_count records in host memory;
// reads run ahead of the update and writes behind it.
#include <memory>
#include <vector>

#include "core/buffer.hpp"
#include "kernels/vector_ops.hpp"
#include "zero/async_file.hpp"
#include "zero/engine_options.hpp"
#include "zero/partition.hpp"

namespace zt {

class OffloadedState {
public:
  // size: elements of the range; sub_group: elements per sub-group (the last may be shorter).
  OffloadedState(size_t size, size_t sub_group) : size_(size), sub_group_(sub_group) {}
  virtual ~OffloadedState() = default;

  size_t size() const { return size_; }
  size_t sub_groups() const { return size_ == 0 ? 0 : (size_ + sub_group_ - 1) / sub_group_; }
  Range sub_group(size_t k) const { return {k * sub_group_, std::min(size_, (k + 1) * sub_group_)}; }

  // Starts bringing sub-group k in when there is room (files only); false: no room.
  virtual bool prefetch(size_t) { return true; }
  // Host pointers to sub-group k's master, m and v (element 0 = the sub-group's first), valid
  // until release(k).
  virtual AdamState acquire(size_t k) = 0;
  // Done with sub-group k; `changed`: its values must be kept (written back to the file).
  virtual void release(size_t k, bool changed) = 0;
  // Every write has landed (errors are thrown here at the latest).
  virtual void flush() {}
  // Seconds its file's I/O threads have been busy (0 for memory).
  virtual double io_seconds() const { return 0; }

private:
  size_t size_, sub_group_;
};

// What make_file_state holds: its file, and its records in host memory (at most buffer_count).
struct FileStateBytes {
  size_t file = 0, host = 0;
};
FileStateBytes file_state_bytes(size_t size, size_t sub_group, int buffer_count);

// The state in memory of `space` (host or pinned memory for cpu offload).
std::unique_ptr<OffloadedState> make_memory_state(size_t size, size_t sub_group, Device& device, MemSpace space);
std::unique_ptr<OffloadedState> make_file_state(size_t size, size_t sub_group, int buffer_count, const std::string& dir,
                                                int rank, const AioOptions& aio);

}  // namespace zt
