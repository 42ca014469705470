#pragma once
// The safetensors format: an 8-byte little-endian header length N, N bytes of JSON
//   {"__metadata__": {"k": "v", ...}, "name": {"dtype": "F32", "shape": [..], "data_offsets": [b, e]}, ...}
// (padded with spaces to a multiple of 8), then the raw little-endian tensor bytes, offsets
// relative to the end of the header.
// A reader that validates everything and reads F32/BF16/F16 into fp32, and a writer.
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ckpt/safetensors_writer.hpp"
#include "core/dtype.hpp"
#include "core/param_layout.hpp"

namespace zt {

struct SafetensorsEntry {
  std::string name;
  std::string dtype;            // as written: F32, BF16, F16, F64, I64, ... (all validated)
  std::vector<uint64_t> shape;
  uint64_t begin = 0, end = 0;  // byte range relative to the start of the data section
  uint64_t numel() const;
};

class SafetensorsReader {
public:
  // Opens and validates the file: header length against the file size, JSON syntax, duplicate
  // names, known dtypes, shapes, offsets inside the data section and not overlapping, byte length
  // = numel * dtype size. Errors (zt::Error) name the file, the tensor and the offset.
  explicit SafetensorsReader(const std::string& path);
  ~SafetensorsReader();
  SafetensorsReader(const SafetensorsReader&) = delete;
  SafetensorsReader& operator=(const SafetensorsReader&) = delete;

  const std::string& path() const { return path_; }
  const std::vector<SafetensorsEntry>& tensors() const { return tensors_; }  // in data order
  const SafetensorsEntry* find(const std::string& name) const;                // nullptr if absent
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  uint64_t header_length() const { return header_length_; }
  uint64_t data_start() const { return 8 + header_length_; }

  // Reads a tensor converted to fp32 into out (numel() floats). F32, BF16 and F16 only.
  void read_f32(const SafetensorsEntry& entry, float* out) const;
  void read_f32(const std::string& name, float* out) const;  // error naming a missing tensor
  // Elements [first, first + count) of the tensor (flat, row-major) into out.
  void read_f32(const SafetensorsEntry& entry, uint64_t first, uint64_t count, float* out) const;

private:
  nlohmann::json read_header();

  std::string path_;
  int fd_ = -1;
  uint64_t file_size_ = 0, header_length_ = 0;
  std::vector<SafetensorsEntry> tensors_;
  std::map<std::string, std::string> metadata_;
};

struct SafetensorsTensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<uint64_t> shape;
  const void* data = nullptr;  // numel * dtype_size(dtype) bytes
};

// Writes the tensors (laid out by decreasing element size, then name, as the reference writer
// does, so every tensor is aligned) and the metadata. Written to PATH.tmp, fsync'ed, then renamed
// (safetensors_writer.hpp writes a file tensor by tensor).
void write_safetensors(const std::string& path, const std::vector<SafetensorsTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// Bytes per element of a safetensors dtype name; 0 for a name the format does not define.
size_t safetensors_dtype_size(const std::string& dtype);

}  // namespace zt
