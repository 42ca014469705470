#pragma once
// The trained model `generate` and `eval` run: its architecture and weights from a path.
//   a checkpoint           training.checkpoint_dir (the step its `latest` names) or one step
//                          directory: the model block of the config meta.json records, and the
//                          fp32 master weights of the shards (every shard's CRC32C checked);
//   GPT-2 safetensors      a model.safetensors file, or a directory holding it (what
//                          training.save_final and `zerotrain export` write), under Hugging Face
//                          names, with the config.json beside it for the shape.
// A Hugging Face model directory of the llama family (config.json + safetensors shards) is
// refused, saying so, until lib/ckpt reads one (read_hf_model_dir below is where it plugs in).
#include <string>

#include "core/buffer.hpp"
#include "model/gpt_shape.hpp"

namespace zt {

struct LoadedModel {
  GptShape shape;
  Buffer<float> weights;     // the flat parameters of make_gpt_layout(shape); padded vocabulary rows 0
  std::string what;          // "checkpoint DIR (step 120)", "GPT-2 weights FILE", for messages
  std::string tokenizer;     // a tokenizer that came with the model (a directory or file), or ""
};

// Errors (zt::Error) name the path and what is wrong: no such path, a directory that holds no
// model, a missing or unreadable config.json, a shape the weights do not have.
LoadedModel load_model(const std::string& path);

// A Hugging Face model directory (config.json and model*.safetensors): the model's shape and its
// weights in zerotrain's flat layout. GPT-2 only so far.
LoadedModel read_hf_model_dir(const std::string& dir);

}  // namespace zt
