#pragma once
// The safetensors format: an 8-byte little-endian header length N, N bytes of JSON
//   {"__metadata__": {"k": "v", ...}, "name": {"dtype": "F32", "shape": [..], "data_offsets": [b, e]}, ...}
// (padded with spaces to a multiple of 8), then the raw little-endian tensor bytes, offsets
// relative to the end of the header.
// Part 1: a generic reader that validates everything and reads F32/BF16/F16 into fp32, and a writer.
// Part 2: GPT-2 weights under Hugging Face names (docs/architecture.md, "Exported weights").
#include <cstdint>
#include <map>
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

// ---- GPT-2 under Hugging Face names ----

// The file of every tensor of the layout under its name in `dtype`, wte.weight cut to its first
// vocab_size rows (the vocabulary without padding), with metadata {"format": "pt"}.
SafetensorsPlan gpt2_safetensors_plan(const std::string& path, const ParamLayout& layout, int vocab_size,
                                      DType dtype);

// Writes the fp32 file of gpt2_safetensors_plan from the whole flat buffer.
void save_gpt2_safetensors(const std::string& path, const ParamLayout& layout, const float* flat,
                           int vocab_size);

// Fills every tensor of the layout from the file (names with or without the "transformer."
// prefix of GPT2LMHeadModel); wte.weight must be [vocab_size, C] and its padding rows are zeroed.
// A missing tensor or a shape mismatch is an error naming the tensor and both shapes; tensors the
// layout does not have (attn.bias buffers, a tied lm_head.weight) are ignored with a log note.
void load_gpt2_safetensors(const std::string& path, const ParamLayout& layout, float* flat, int vocab_size);

// Writes DIR/config.json for transformers' GPT2LMHeadModel (creates DIR if needed); torch_dtype
// names `dtype`.
void write_gpt2_config_json(const std::string& dir, int n_layer, int n_head, int d_model, int vocab_size,
                            int max_seq_len, DType dtype = DType::F32);

}  // namespace zt
