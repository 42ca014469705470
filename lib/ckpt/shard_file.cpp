#include "ckpt/shard_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <vector>

#include "ckpt/safetensors_writer.hpp"
#include "ckpt/synced_file.hpp"
#include "core/crc32c.hpp"
#include "core/error.hpp"

namespace zt {

namespace {
// Checksummed and written in pieces of this size, so each piece is still in cache when written.
constexpr size_t kPiece = size_t(8) << 20;
}  // namespace

std::map<std::string, std::string> shard_metadata(const ShardIdentity& id) {
  return {{"format", "zerotrain shard"},
          {"begin", std::to_string(id.range.begin)},
          {"end", std::to_string(id.range.end)},
          {"step", std::to_string(id.step)},
          {"layout_crc32c", fmt::format("{:08x}", id.layout_crc32c)}};
}

ShardWritten write_shard_file(const std::string& path, const ShardIdentity& id, const float* const state[3]) {
  std::vector<SafetensorsSpec> specs;
  for (StateTensor t : kStateTensors)
    specs.push_back({std::string(state_tensor_name(t)), DType::F32, {id.range.size()}});
  const SafetensorsPlan plan(std::move(specs), shard_metadata(id), path);
  SyncedFile out(path + ".tmp");
  ShardWritten w;
  auto put = [&](const void* data, size_t bytes) {
    const auto* p = static_cast<const char*>(data);
    for (size_t done = 0; done < bytes; done += kPiece) {
      const size_t n = std::min(kPiece, bytes - done);
      w.crc32c = crc32c(p + done, n, w.crc32c);
      out.append(p + done, n);
    }
    w.bytes += bytes;
  };
  put(plan.head().data(), plan.head().size());
  for (auto& placed : plan.tensors()) {  // in file order
    size_t t = 0;
    while (state_tensor_name(kStateTensors[t]) != placed.spec.name) ++t;
    put(state[t], placed.spec.bytes());
  }
  out.sync();
  out.close();
  rename_durably(path + ".tmp", path);
  return w;
}

ShardWritten checksum_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("{}: cannot open: {}", path, std::strerror(errno));
  std::vector<char> buffer(kPiece);
  ShardWritten w;
  for (;;) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      fail("{}: read failed at offset {}: {}", path, w.bytes, std::strerror(err));
    }
    if (n == 0) break;
    w.crc32c = crc32c(buffer.data(), size_t(n), w.crc32c);
    w.bytes += uint64_t(n);
  }
  ::close(fd);
  return w;
}

}  // namespace zt
