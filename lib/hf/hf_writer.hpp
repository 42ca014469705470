#pragma once
// Writing a Hugging Face model directory (hf/hf_dir.hpp) as transformers' save_pretrained writes
// it, for every family (gpt2, llama, mistral, qwen2, qwen3):
//
//   OUT_DIR/config.json                  the architecture and torch_dtype (hf/hf_config.hpp)
//   OUT_DIR/model.safetensors            every tensor under its Hugging Face name and shape
//                                        (hf_tensors, model/gpt_layout.hpp), vocabulary rows cut to
//                                        vocab_size, metadata {"format": "pt"}
//   or, above max_shard_bytes:
//   OUT_DIR/model-00001-of-00003.safetensors ...  the tensors in layout order, a new file when the
//                                        next tensor would pass the limit (transformers' rule)
//   OUT_DIR/model.safetensors.index.json {"metadata": {"total_size": bytes}, "weight_map": {name: file}}
//   OUT_DIR/tokenizer.json, tokenizer_config.json, ..., generation_config.json
//                                        copied from the model directory the run started from
//
// Written group by group so that nothing holds the whole model at once, into a directory beside
// OUT_DIR that replaces it once every file is written (ckpt/staged_directory.hpp): a failed or
// interrupted save leaves the old OUT_DIR whole and nothing temporary behind. The other files of an
// existing OUT_DIR stay; weight files of an earlier save that the new one does not name
// (model.safetensors beside new shards, shards beside a new single file) go, since transformers
// reads model.safetensors before an index.
//
// Two sources, one writer, so the same state gives the same bytes: a checkpoint's shard files
// (`zerotrain export`) and the ranks of a running job (training.save_final); train/model_export.hpp.
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.hpp"
#include "core/param_layout.hpp"
#include "model/gpt_layout.hpp"

namespace zt {

class SafetensorsFileWriter;
class StagedDirectory;

// transformers' default max_shard_size, "5GB".
constexpr uint64_t kHfMaxShardBytes = 5'000'000'000;

struct HfOutput {
  HfOutput() = default;
  explicit HfOutput(DType d) : dtype(d) {}

  // F32 (the master weights); BF16 rounded to nearest even, exactly the weights a bf16 run computes
  // with; F16 rounded to nearest even (a weight beyond fp16's range is an error naming it).
  DType dtype = DType::F32;
  uint64_t max_shard_bytes = kHfMaxShardBytes;
  // The Hugging Face model directory the run started from, or "": a PEFT adapter's config names it
  // as its base model.
  std::string model_dir;
  // Its config.json as the run read it (null: none): its other keys carry over.
  nlohmann::ordered_json model_config;
  // The directory whose tokenizer files and generation_config.json ship with the model, or "":
  // model_dir's, or the directory of the tokenizer the run's data was made with
  // (train/model_export.hpp).
  std::string tokenizer_dir;
};

// "5GB", "500MB", "2GiB", "1048576": bytes (kB, MB, GB, TB by 1000, KiB, MiB, GiB, TiB by 1024, as
// transformers reads max_shard_size). Throws zt::Error naming `what`.
uint64_t parse_byte_size(const std::string& text, const std::string& what);


class HfModelWriter {
public:
  // The layout must be the one hf_tensors(shape) describes (an error naming the tensor otherwise).
  // Creates out_dir and every weight file's temporary file.
  HfModelWriter(std::string out_dir, const ParamLayout& layout, const GptShape& shape, HfOutput output);
  ~HfModelWriter();
  // values: the fp32 elements [g.offset, g.offset + g.size) of the flat buffer.
  void write_group(const ParamGroup& g, const float* values);
  void commit();

private:
  void copy_source_files() const;

  std::string dir_;
  std::unique_ptr<StagedDirectory> staged_;
  GptShape shape_;
  HfOutput output_;
  std::vector<HfTensor> tensors_;
  std::vector<size_t> file_of_;  // per tensor
  std::vector<std::string> file_names_;
  std::vector<std::unique_ptr<SafetensorsFileWriter>> files_;
  nlohmann::ordered_json config_json_;
  uint64_t total_bytes_ = 0;
  std::vector<uint16_t> converted_;
};

}  // namespace zt
