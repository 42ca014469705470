#pragma once
// A PEFT LoRA adapter directory, as PeftModel.save_pretrained writes it and
// PeftModel.from_pretrained(base, DIR) reads it:
//
//   DIR/adapter_config.json        PEFT's LoraConfig: peft_type LORA, task_type CAUSAL_LM, r,
//                                  lora_alpha, lora_dropout, target_modules, use_rslora,
//                                  fan_in_fan_out (true for GPT-2's Conv1D), bias "none", ...
//   DIR/adapter_model.safetensors  base_model.model.<module>.lora_A.weight [r, in] and
//                                  lora_B [out, r] for every adapted module (<module>:
//                                  model.layers.0.self_attn.q_proj, or GPT-2's
//                                  transformer.h.0.attn.c_attn), metadata {"format": "pt"}
//   DIR/tokenizer.json, ...        copied from the base model's directory, as a trainer saves them
//   DIR/zerotrain_base_model.json  zerotrain's record of the base model's files (size, sha256), so
//                                  that a base changed since the adapter was saved is named
//
// The weights file is written under a temporary name and renamed when complete, adapter_config.json
// last: a directory without it is no adapter.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/param_layout.hpp"
#include "hf/hf_dir.hpp"
#include "hf/hf_writer.hpp"
#include "model/gpt_layout.hpp"
#include "model/lora.hpp"

namespace zt {

// A layout tensor's name in a PEFT file: "base_model.model." and the base model class's name
// (GPT2LMHeadModel's modules under "transformer.").
std::string peft_tensor_name(const GptShape& shape, const std::string& layout_name);
// The adapter tensors of a training layout (model/lora.hpp) under PEFT's names, at their flat
// offsets: what hf/hf_weights.hpp reads from an adapter's weights file.
std::vector<HfTensor> peft_tensors(const GptShape& shape, const ParamLayout& layout);

// adapter_config.json for adapters of `spec` on a base model named `base_model` (a path, or "").
nlohmann::ordered_json peft_config_json(const GptShape& shape, const LoraSpec& spec, const std::string& base_model);

// What DIR/adapter_config.json says of the adapters (r, lora_alpha, lora_dropout, use_rslora,
// target_modules as the sites' names) and of their base model (base_model_name_or_path). Errors
// name the file and the key.
struct PeftAdapterConfig {
  LoraSpec spec;
  std::string base_model;
};
PeftAdapterConfig read_peft_adapter_config(const std::string& dir);

// The base model directory an adapter directory names, checked: there as a model directory, and,
// where the adapter's zerotrain_base_model.json recorded them, its files as they were when the
// adapter was saved. One-line errors name the adapter, the base and the file that is gone or changed.
std::string check_adapter_base(const std::string& dir, const PeftAdapterConfig& config);

// Checks DIR/adapter_config.json against `spec` (peft_type, r, lora_alpha, use_rslora, the target
// modules, and none of what zerotrain's adapters cannot be: biases, DoRA, per-layer ranks), naming
// the key and both values; returns the path of DIR's weights file.
std::string check_peft_adapter(const std::string& dir, const GptShape& shape, const LoraSpec& spec);

class SafetensorsFileWriter;
class StagedDirectory;

class PeftAdapterWriter {
public:
  // Stages out_dir beside it (ckpt/staged_directory.hpp) with the weights file open. output: the dtype of the weights,
  // and where the tokenizer files are copied from (tokenizer_dir) and the base model named in the config (model_dir).
  PeftAdapterWriter(std::string out_dir, const ParamLayout& layout, const GptShape& shape, const LoraSpec& spec,
                    HfOutput output);
  ~PeftAdapterWriter();
  // values: the fp32 elements of an adapter group; other groups are skipped.
  void write_group(const ParamGroup& g, const float* values);
  void commit();

private:
  std::string dir_;
  GptShape shape_;
  LoraSpec spec_;
  HfOutput output_;
  std::unique_ptr<StagedDirectory> staged_;  // written beside dir_, swapped in at commit
  std::unique_ptr<SafetensorsFileWriter> file_;
  std::vector<uint16_t> converted_;
};

}  // namespace zt
