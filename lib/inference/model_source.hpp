#pragma once
// The trained model `generate` and `eval` run: its architecture and weights from a path.
//   a checkpoint           training.checkpoint_dir (the step its `latest` names) or one step
//                          directory: the model block of the config meta.json records, and the
//                          fp32 master weights of the shards (every shard's CRC32C checked); of a
//                          run that froze parameters, those from where it started (its
//                          training.init_from, or its seed), and its LoRA adapters merged;
//   a model directory      as Hugging Face ships one (and training.save_final and `zerotrain
//                          export` write): config.json for the architecture, model.safetensors
//                          or the shards model.safetensors.index.json lists, by Hugging Face
//                          names (lib/hf/hf_weights.hpp); or one safetensors file of such a
//                          directory, with its config.json beside it;
//   a PEFT adapter         adapter_config.json and adapter_model.safetensors (a LoRA run's
//                          training.save_final or --output_dir): the base model its
//                          base_model_name_or_path names (there, and unchanged since the adapter
//                          was saved: hf/peft_adapter.hpp), the adapters merged; the adapter
//                          directory's tokenizer files, else the base's.
#include <optional>
#include <string>

#include "core/buffer.hpp"
#include "core/dtype.hpp"
#include "data/data_tokenizer.hpp"
#include "model/gpt_shape.hpp"
#include "model/lora.hpp"

namespace zt {

struct LoadedModel {
  GptShape shape;
  Buffer<float> weights;     // the flat parameters of make_gpt_layout(shape); padded vocabulary rows 0
  std::string what;          // "checkpoint DIR (step 120)", "qwen3 weights FILE", for messages
  std::string tokenizer;     // a tokenizer that came with the model (a directory or file), or ""
  DType trained_dtype = DType::F32;  // what a checkpoint's run computed with (its weights rounded to it)
  // What its ids are known to mean (inference/model_tokenizer.hpp): a token file or a tokenizer
  // given for it is checked against this.
  std::optional<TokenizerReference> tokenizer_reference;
};

// A PEFT adapter directory on its base model: the values of the training layout (the base model's
// weights, then the adapters), not merged.
struct AdapterOnBase {
  std::string dir, base;  // the adapter directory, the base model directory it names
  LoadedModel model;      // the base model (its tokenizer: the adapter directory's where it has one)
  TrainedParts parts;     // the adapters' LoRA spec, from adapter_config.json
  ParamLayout layout;     // make_training_layout(model.shape, parts)
  std::vector<float> values;
};
AdapterOnBase read_adapter_on_base(const std::string& dir);

// --dtype of generate and eval: "auto" is the dtype the model was trained in (a checkpoint's run's;
// fp32 for a model directory, whose weights are what they are), else fp32, bf16 or fp16. The
// weights are rounded to it as training rounded them.
DType inference_dtype(const std::string& option, const LoadedModel& model);
// The dtype the model computes in on `device`: a GPU computes in bf16 or fp32 (fp16 weights in
// fp32), the CPU in fp32.
DType compute_dtype(DType dtype);

// Errors (zt::Error) name the path and what is wrong: no such path, a directory that holds no
// model, a missing or unreadable config.json, a shape the weights do not have.
LoadedModel load_model(const std::string& path);

// A Hugging Face model directory (config.json and model*.safetensors): the model's shape and its
// weights in zerotrain's flat layout, of every family.
LoadedModel read_hf_model_dir(const std::string& dir);

}  // namespace zt
