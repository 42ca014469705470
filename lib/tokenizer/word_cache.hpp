#pragma once
// Ids of words already encoded, per thread: text repeats its words, and a lookup costs far less
// than merging. Bounded: when full it starts over.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/text_hash.hpp"

namespace zt {

class WordCache {
public:
  static constexpr size_t kMaxWordBytes = 64;  // longer words are not kept

  WordCache() : slots_(kSlots) {}

  static uint64_t hash(std::string_view word) { return text_hash(word); }

  // Appends the cached ids of `word` to `ids` and returns true, or returns false.
  bool find(std::string_view word, uint64_t h, std::vector<int32_t>& ids) const {
    for (size_t s = h & (kSlots - 1);; s = (s + 1) & (kSlots - 1)) {
      const Slot& slot = slots_[s];
      if (slot.generation != generation_) return false;
      if (slot.hash == h && slot.key_len == word.size() &&
          std::memcmp(keys_.data() + slot.key_at, word.data(), word.size()) == 0) {
        ids.insert(ids.end(), values_.begin() + slot.value_at, values_.begin() + slot.value_at + slot.value_len);
        return true;
      }
    }
  }

  void insert(std::string_view word, uint64_t h, const int32_t* ids, size_t count) {
    if (word.size() > kMaxWordBytes) return;
    if (used_ * 2 >= kSlots) clear();
    size_t s = h & (kSlots - 1);
    while (slots_[s].generation == generation_) s = (s + 1) & (kSlots - 1);
    slots_[s] = Slot{h, uint32_t(keys_.size()), uint32_t(values_.size()), uint16_t(word.size()), uint16_t(count),
                     generation_};
    keys_.append(word);
    values_.insert(values_.end(), ids, ids + count);
    ++used_;
  }

  // Forgets everything (a new generation: no slot needs clearing).
  void clear() {
    ++generation_;
    used_ = 0;
    keys_.clear();
    values_.clear();
  }

private:
  static constexpr size_t kSlots = size_t(1) << 16;
  struct Slot {
    uint64_t hash = 0;
    uint32_t key_at = 0, value_at = 0;
    uint16_t key_len = 0, value_len = 0;
    uint32_t generation = 0;
  };
  std::vector<Slot> slots_;
  std::string keys_;
  std::vector<int32_t> values_;
  size_t used_ = 0;
  uint32_t generation_ = 1;
};

}  // namespace zt
