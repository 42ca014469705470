#include "zero/param_shard.hpp"

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
    : dtype_(dtype), size_(size),
      // Buffered: stage 3 reads group pieces at any offset straight into the gather's buffer.
      file_(dir, name, uint64_t(size) * dtype_size(dtype), aio, what, /*direct=*/false) {
  MemoryLedger::instance().add(MemSpace::File, MemCategory::Params, file_.size());
}

FileParamShard::~FileParamShard() { MemoryLedger::instance().sub(MemSpace::File, MemCategory::Params, file_.size()); }

PendingRead FileParamShard::read_async(Range r, void* host) {
  if (r.empty()) return {};
  const size_t esz = dtype_size(dtype_);
  AsyncFile::Ticket ticket = file_.read(uint64_t(r.begin) * esz, host, r.size() * esz);
  return PendingRead([ticket]() mutable { ticket.wait(); });
}

void FileParamShard::read(Range r, void* host) { read_async(r, host).finish(); }

void FileParamShard::write(Range r, const void* host) {
  if (r.empty()) return;
  const size_t esz = dtype_size(dtype_);
  file_.write(uint64_t(r.begin) * esz, host, r.size() * esz).wait();
}

}  // namespace zt
