#pragma once
// Memory that registers in the memory ledger. Buffer<T> owns n elements of T in one memory space
// of a device, counted under (space, category) for its lifetime. Without a device it is host
// memory of the CPU device. Zero-initialised unless asked otherwise (Init::Uninitialised, for
// buffers every use overwrites first). operator[] and span() are for host-visible spaces only.
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

#include "core/device.hpp"
#include "core/ledger.hpp"

namespace zt {

enum class Init { Zero, Uninitialised };

template <typename T>
class Buffer {
public:
  Buffer() = default;
  Buffer(MemCategory category, size_t n, Init init = Init::Zero)
      : Buffer(cpu_device(), MemSpace::Host, category, n, init) {}
  Buffer(Device& device, MemSpace space, MemCategory category, size_t n, Init init = Init::Zero)
      : device_(&device), space_(space), category_(category) {
    if (n == 0) return;
    if (n > (SIZE_MAX - 63) / sizeof(T)) fail_allocation(category, SIZE_MAX, space);
    data_ = static_cast<T*>(allocate_counted(device, space, category, n * sizeof(T), init == Init::Zero));
    n_ = n;
  }
  ~Buffer() { reset(); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& o) noexcept { *this = std::move(o); }
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      reset();
      device_ = o.device_;
      space_ = o.space_;
      category_ = o.category_;
      data_ = std::exchange(o.data_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }

  void reset() {
    if (data_) {
      MemoryLedger::instance().sub(space_, category_, bytes());
      device_->free(space_, data_, bytes());
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
  MemSpace space() const { return space_; }
  Device& device() const { return *device_; }

private:
  Device* device_ = nullptr;
  MemSpace space_ = MemSpace::Host;
  MemCategory category_ = MemCategory::Buffers;
  T* data_ = nullptr;
  size_t n_ = 0;
};

}  // namespace zt
