#pragma once
// Host memory that registers in the memory ledger. Buffer<T> owns n elements of T,
// 64-byte aligned, zero-initialised, and counted under its category for its lifetime.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <span>
#include <utility>

#include "core/ledger.hpp"

namespace zt {

template <typename T>
class Buffer {
public:
  Buffer() = default;
  Buffer(MemCategory category, size_t n) : category_(category), n_(n) {
    if (n == 0) return;
    if (n > (SIZE_MAX - 63) / sizeof(T)) fail_allocation(category, SIZE_MAX);
    size_t bytes = (n * sizeof(T) + 63) / 64 * 64;
    data_ = static_cast<T*>(std::aligned_alloc(64, bytes));
    if (!data_) fail_allocation(category, bytes);
    std::memset(static_cast<void*>(data_), 0, bytes);
    MemoryLedger::instance().add(category_, n_ * sizeof(T));
  }
  ~Buffer() { reset(); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& o) noexcept { *this = std::move(o); }
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      reset();
      category_ = o.category_;
      data_ = std::exchange(o.data_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }

  void reset() {
    if (data_) {
      MemoryLedger::instance().sub(category_, n_ * sizeof(T));
      std::free(data_);
    }
    data_ = nullptr;
    n_ = 0;
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return n_; }
  size_t bytes() const { return n_ * sizeof(T); }
  bool empty() const { return n_ == 0; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  std::span<T> span() { return {data_, n_}; }
  std::span<const T> span() const { return {data_, n_}; }
  MemCategory category() const { return category_; }

private:
  MemCategory category_ = MemCategory::Buffers;
  T* data_ = nullptr;
  size_t n_ = 0;
};

}  // namespace zt
