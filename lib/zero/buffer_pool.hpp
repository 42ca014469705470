#pragma once
// Transient device buffers of the engine (working copies of groups in the model's dtype, the
// model's gradients of a group, gathered stage-3 groups), kept for reuse by size: the same
// acquire/release pattern every step allocates only during the first, so no step after it
// allocates at all (docs/architecture.md, "The engine"). In the ledger a buffer in use counts
// as Buffers and a free one as Cached, so "buffers" keeps meaning what a step holds.
#include <cstddef>
#include <vector>

#include "core/device.hpp"

namespace zt {

class BufferPool {
public:
  explicit BufferPool(Device& device, MemSpace space = MemSpace::Device) : device_(device), space_(space) {}
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A free buffer of exactly `bytes` (zero-filled when `zeroed`), allocated when none is free.
  void* acquire(size_t bytes, bool zeroed = false);
  void release(void* p);  // null: nothing

private:
  struct Block {
    void* data = nullptr;
    size_t bytes = 0;
    bool in_use = false;
  };
  Device& device_;
  MemSpace space_;
  std::vector<Block> blocks_;
};

}  // namespace zt
