#pragma once
// The parameters of the flat range a rank updates, in the training dtype, wherever they live:
// resident in memory (all of them at stages 0-2, this rank's shard at stage 3, offloaded to host
// memory or not), or in a file (stage 3 with offload_param nvme). The optimizer writes updated
// values through it; stage 3 reads the pieces it all-gathers.
#include <functional>
#include <memory>
#include <string>

#include "core/buffer.hpp"
#include "core/view.hpp"
#include "zero/async_file.hpp"
#include "zero/buffer_pool.hpp"
#include "zero/partition.hpp"

namespace zt {

// A read in flight; finish() waits for it and puts the values in place (no-op when done already).
class PendingRead {
public:
  PendingRead() = default;
  explicit PendingRead(std::function<void()> finish) : finish_(std::move(finish)) {}
  void finish() {
    auto f = std::move(finish_);
    finish_ = nullptr;
    if (f) f();
  }
  bool pending() const { return bool(finish_); }

private:
  std::function<void()> finish_;
};

class ParamShard {
public:
  virtual ~ParamShard() = default;
  virtual DType dtype() const = 0;
  virtual size_t size() const = 0;  // elements
  // The whole range in memory a device can use; a null view when it lives in a file.
  virtual View view() = 0;
  // Elements [r.begin, r.end) (relative to the range's start) to and from host memory.
  virtual void read(Range r, void* host) = 0;
  virtual void write(Range r, const void* host) = 0;
  // A read that may run while the caller goes on (files); memory reads finish at once.
  virtual PendingRead read_async(Range r, void* host) {
    read(r, host);
    return {};
  }
};

// A range in memory: a view into storage someone else owns.
class ResidentParamShard final : public ParamShard {
public:
  ResidentParamShard(Device& device, View values, size_t size) : device_(device), values_(values), size_(size) {}
  DType dtype() const override { return values_.dtype; }
  size_t size() const override { return size_; }
  View view() override { return values_; }
  void read(Range r, void* host) override;
  void write(Range r, const void* host) override;

private:
  Device& device_;
  View values_;
  size_t size_;
};

// A range in a scratch file (offload_param nvme). Reads may be asynchronous (read_async), for
// stage 3's read-ahead straight into the buffers it all-gathers in.
class FileParamShard final : public ParamShard {
public:
  FileParamShard(DType dtype, size_t size, const std::string& dir, const std::string& name, const AioOptions& aio,
                 const std::string& what);
  ~FileParamShard() override;
  // Bytes of the file of `size` elements of `dtype` (the ledger's File bytes).
  static size_t file_bytes(DType dtype, size_t size) { return direct_aligned(uint64_t(size) * dtype_size(dtype)); }
  DType dtype() const override { return dtype_; }
  size_t size() const override { return size_; }
  View view() override { return {}; }
  void read(Range r, void* host) override;
  void write(Range r, const void* host) override;
  PendingRead read_async(Range r, void* host) override;

private:
  DType dtype_;
  size_t size_;
  AsyncFile file_;
};

}  // namespace zt
