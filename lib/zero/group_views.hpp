#pragma once
// fp32 working copies of parameter groups handed to the model, counted by fetch/release:
// a group fetched twice (the embeddings: lookup and LM head) shares one copy.
#include <map>

#include "core/buffer.hpp"

namespace zt {

class GroupViews {
public:
  float* find(int g) {
    auto it = views_.find(g);
    return it == views_.end() ? nullptr : it->second.values.data();
  }
  float* acquire(int g, size_t n, bool* fresh) {
    auto& v = views_[g];
    *fresh = v.values.empty() && n > 0;
    if (*fresh) v.values = Buffer<float>(MemCategory::Buffers, n);
    ++v.refs;
    return v.values.data();
  }
  // Returns the reference count left; the copy is dropped at zero unless `keep`.
  int release(int g, bool keep = false) {
    auto it = views_.find(g);
    if (it == views_.end()) return 0;
    int left = --it->second.refs;
    if (left <= 0 && !keep) views_.erase(it);
    return std::max(left, 0);
  }
  void drop(int g) { views_.erase(g); }
  void clear() { views_.clear(); }

private:
  struct View {
    Buffer<float> values;
    int refs = 0;
  };
  std::map<int, View> views_;
};

}  // namespace zt
