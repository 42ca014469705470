#pragma once
// The weights of a Hugging Face model directory in zerotrain's flat parameter layout, read range
// by range: model.safetensors, or the shards model.safetensors.index.json lists (as transformers'
// save_pretrained writes them), in F32, BF16 or F16, converted to fp32. Opening reads the headers
// only; read(begin, count) reads the bytes of exactly those elements, so a rank that holds a shard
// of the parameters (ZeRO stage 3) never reads, or holds, the rest of the model.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ckpt/safetensors.hpp"
#include "model/gpt_layout.hpp"

namespace zt {

class HfWeights {
public:
  // `path`: a model directory (model.safetensors, else model.safetensors.index.json and its
  // shards) or one safetensors file. `tensors`: what the model needs (hf_tensors(shape)); GPT-2's
  // are found with or without transformers' "transformer." prefix. Every tensor is checked here,
  // before anything is read: present (where the index says), its shape, a floating-point dtype,
  // its bytes inside its file. Errors (zt::Error) name the tensor and the file.
  HfWeights(const std::string& path, std::vector<HfTensor> tensors);
  ~HfWeights();
  HfWeights(const HfWeights&) = delete;
  HfWeights& operator=(const HfWeights&) = delete;

  // fp32 values of flat elements [begin, begin + count) into dst: each tensor's elements there,
  // zeros in the padded vocabulary rows. A weight that is not finite, or a read that fails, is an
  // error naming the tensor and the file.
  void read(float* dst, size_t begin, size_t count) const;

  size_t numel() const { return numel_; }               // flat elements the tensors cover
  uint64_t bytes_read() const { return bytes_read_; }   // file bytes of tensor data read so far
  const std::vector<std::string>& files() const { return file_names_; }
  std::string describe() const;  // "DIR: 3 safetensors files, 1.2 GB of bf16"

private:
  struct Source {
    const SafetensorsReader* file = nullptr;
    const SafetensorsEntry* entry = nullptr;
  };
  void open(const std::string& path);
  std::vector<std::unique_ptr<SafetensorsReader>> readers_;
  std::vector<std::string> file_names_;
  std::vector<HfTensor> tensors_;  // in flat order
  std::vector<Source> sources_;    // one per tensor
  size_t numel_ = 0;
  mutable uint64_t bytes_read_ = 0;
};

}  // namespace zt
