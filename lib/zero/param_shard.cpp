#include "zero/param_shard.hpp"

#include <cstring>

#include "core/error.hpp"

namespace zt {

void ResidentParamShard::read(Range r, void* host) {
  const size_t esz = dtype_size(values_.dtype);
  device_.copy(host, static_cast<char*>(values_.data) + r.begin * esz, r.size() * esz, device_.compute());
  device_.synchronize(device_.compute());
}

void ResidentParamShard::write(Range r, const void* host) {
  const size_t esz = dtype_size(values_.dtype);
  device_.copy(static_cast<char*>(values_.data) + r.begin * esz, host, r.size() * esz, device_.compute());
  device_.synchronize(device_.compute());
}

FileParamShard::FileParamShard(DType dtype, size_t size, const std::string& dir, const std::string& name,
                               const AioOptions& aio, const std::string& what)
    : dtype_(dtype), size_(size), bounce_(cpu_device(), MemSpace::Host),
      file_(dir, name, uint64_t(size) * dtype_size(dtype), aio, what) {
  MemoryLedger::instance().add(MemSpace::File, MemCategory::Params, file_.size());
}

FileParamShard::~FileParamShard() { MemoryLedger::instance().sub(MemSpace::File, MemCategory::Params, file_.size()); }

PendingRead FileParamShard::read_async(Range r, void* host) {
  if (r.empty()) return {};
  const size_t esz = dtype_size(dtype_);
  const uint64_t begin = uint64_t(r.begin) * esz, end = uint64_t(r.end) * esz;
  const uint64_t first = begin / AsyncFile::kDirectAlignment * AsyncFile::kDirectAlignment;
  const uint64_t last = direct_aligned(end);
  void* bounce = bounce_.acquire(size_t(last - first));
  AsyncFile::Ticket ticket = file_.read(first, bounce, size_t(last - first));
  return PendingRead([this, ticket, bounce, skip = size_t(begin - first), bytes = size_t(end - begin), host]() mutable {
    struct Release {  // the bounce buffer goes back whether the read succeeded or not
      BufferPool& pool;
      void* p;
      ~Release() { pool.release(p); }
    } release{bounce_, bounce};
    ticket.wait();
    std::memcpy(host, static_cast<char*>(bounce) + skip, bytes);
  });
}

void FileParamShard::read(Range r, void* host) { read_async(r, host).finish(); }

void FileParamShard::write(Range r, const void* host) {
  if (r.empty()) return;
  const size_t esz = dtype_size(dtype_);
  const uint64_t begin = uint64_t(r.begin) * esz, bytes = uint64_t(r.size()) * esz;
  if (begin % AsyncFile::kDirectAlignment != 0 || (bytes % AsyncFile::kDirectAlignment != 0 && r.end != size_))
    fail("FileParamShard: a write of elements [{}, {}) is not aligned to the file's 4 KiB blocks", r.begin, r.end);
  const size_t span = size_t(direct_aligned(bytes));
  void* bounce = bounce_.acquire(span);
  std::memcpy(bounce, host, bytes);
  std::memset(static_cast<char*>(bounce) + bytes, 0, span - bytes);
  try {
    file_.write(begin, bounce, span).wait();
  } catch (...) {
    bounce_.release(bounce);
    throw;
  }
  bounce_.release(bounce);
}

}  // namespace zt
