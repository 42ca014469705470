#pragma once
// Working copies of parameter groups in the model's dtype (when it differs from the storage dtype),
// counted by fetch/release: a group fetched twice (the embeddings: lookup and LM head) shares one
// copy. Copies come from the engine's buffer pool and go back to it when nobody holds them.
#include <vector>

#include "core/error.hpp"
#include "zero/buffer_pool.hpp"

namespace zt {

class GroupCopies {
public:
  GroupCopies(BufferPool& pool, size_t groups) : pool_(pool), copies_(groups) {}
  ~GroupCopies() { clear(); }
  GroupCopies(const GroupCopies&) = delete;
  GroupCopies& operator=(const GroupCopies&) = delete;

  void* find(int g) const { return copies_[size_t(g)].data; }
  // Takes a reference to group g's copy of `bytes` bytes; *fresh: it was just made and must be filled.
  void* acquire(int g, size_t bytes, bool* fresh) {
    auto& v = copies_[size_t(g)];
    *fresh = v.data == nullptr;
    if (*fresh) v.data = pool_.acquire(bytes);
    ++v.refs;
    return v.data;
  }
  // Drops a reference; the copy goes back to the pool at zero.
  void release(int g) {
    auto& v = copies_[size_t(g)];
    if (v.refs <= 0) fail("GroupCopies: group {} released more often than fetched", g);
    if (--v.refs == 0) {
      pool_.release(v.data);
      v.data = nullptr;
    }
  }
  void clear() {
    for (auto& v : copies_) {
      if (v.data) pool_.release(v.data);
      v = {};
    }
  }

private:
  struct Copy {
    void* data = nullptr;
    int refs = 0;
  };
  BufferPool& pool_;
  std::vector<Copy> copies_;
};

}  // namespace zt
