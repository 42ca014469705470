#pragma once
// Writing a safetensors file piece by piece. The header holds every tensor's offsets, so it is
// planned first from the names, dtypes and shapes; the data is then written as it becomes
// available, one tensor at a time, at its place, and nothing needs the whole file in memory.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.hpp"

namespace zt {

class SyncedFile;

struct SafetensorsSpec {
  std::string name;
  DType dtype = DType::F32;
  std::vector<uint64_t> shape;
  uint64_t bytes() const;
};

class SafetensorsPlan {
public:
  // Tensors are laid out by decreasing element size, then name (as the reference writer does, so
  // every tensor is aligned); the data section starts 8-byte aligned. A reserved or repeated name
  // is an error naming `path`.
  SafetensorsPlan(std::vector<SafetensorsSpec> tensors, const std::map<std::string, std::string>& metadata,
                  const std::string& path);

  struct Placed {
    SafetensorsSpec spec;
    uint64_t offset = 0;  // first byte in the file
  };
  const std::string& head() const { return head_; }  // the file's first bytes: length and header
  const std::vector<Placed>& tensors() const { return placed_; }  // in file order
  const Placed& find(const std::string& name) const;  // throws zt::Error for an unknown name
  uint64_t file_size() const { return file_size_; }

private:
  std::string path_, head_;
  std::vector<Placed> placed_;
  uint64_t file_size_ = 0;
};

// Creates PATH.tmp with the plan's header; commit() renames it to PATH once every tensor has been
// written, so PATH is always either absent (or the previous file) or complete. A writer destroyed
// before commit() removes PATH.tmp.
class SafetensorsFileWriter {
public:
  SafetensorsFileWriter(std::string path, SafetensorsPlan plan);
  ~SafetensorsFileWriter();
  void write(const std::string& name, const void* data);  // the tensor's bytes()
  void commit();  // fsync, rename, fsync of the directory; an error if a tensor was not written

private:
  std::string path_;
  SafetensorsPlan plan_;
  std::unique_ptr<SyncedFile> file_;
  std::vector<bool> written_;
  bool committed_ = false;
};

}  // namespace zt
