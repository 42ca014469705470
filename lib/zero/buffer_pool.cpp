#include "zero/buffer_pool.hpp"

#include "core/error.hpp"
#include "core/ledger.hpp"

namespace zt {

BufferPool::~BufferPool() {
  auto& ledger = MemoryLedger::instance();
  for (Block& b : blocks_) {
    ledger.sub(space_, b.in_use ? MemCategory::Buffers : MemCategory::Cached, b.bytes);
    device_.free(space_, b.data, b.bytes);
  }
}

void* BufferPool::acquire(size_t bytes, bool zeroed) {
  if (bytes == 0) return nullptr;
  auto& ledger = MemoryLedger::instance();
  for (Block& b : blocks_)
    if (!b.in_use && b.bytes == bytes) {
      b.in_use = true;
      ledger.move(space_, MemCategory::Cached, MemCategory::Buffers, bytes);
      if (zeroed) device_.fill_zero(b.data, bytes, device_.compute());
      return b.data;
    }
  void* data = allocate_counted(device_, space_, MemCategory::Buffers, bytes, zeroed);
  blocks_.push_back({data, bytes, true});
  return data;
}

void BufferPool::release(void* p) {
  if (!p) return;
  for (Block& b : blocks_)
    if (b.data == p) {
      if (!b.in_use) fail("BufferPool: a buffer was released twice");
      b.in_use = false;
      MemoryLedger::instance().move(space_, MemCategory::Buffers, MemCategory::Cached, b.bytes);
      return;
    }
  fail("BufferPool: released a buffer it does not hold");
}

}  // namespace zt
