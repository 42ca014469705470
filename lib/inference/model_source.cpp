#include "inference/model_source.hpp"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "config/model_block.hpp"
#include "core/error.hpp"
#include "hf/hf_dir.hpp"
#include "hf/hf_weights.hpp"
#include "hf/peft_adapter.hpp"
#include "inference/model_tokenizer.hpp"
#include "model/gpt_layout.hpp"
#include "model/lora.hpp"
#include "start/run_weights.hpp"

namespace zt {

namespace fs = std::filesystem;

namespace {

LoadedModel read_checkpoint(const std::string& path) {
  const RunReadBack back(path);
  const CheckpointMeta& meta = back.checkpoint().meta();
  const TrainedModel& model = back.model();
  back.verify();
  LoadedModel m{model.shape, {}, "", "", {}};
  m.weights = Buffer<float>(MemCategory::Params, make_gpt_layout(model.shape).total, Init::Uninitialised);
  back.groups(SavedForm::Model).read_model(m.weights.data());
  m.what = fmt::format("checkpoint {} (step {}{})", back.checkpoint().dir(), meta.step,
                       model.parts.lora.enabled() ? ", LoRA adapters merged" : "");
  m.trained_dtype = dtype_from_name(meta.dtype);
  const ModelTokenizer tokenizer = tokenizer_of_checkpoint(meta, back.run(), back.checkpoint().dir());
  m.tokenizer = tokenizer.path;
  m.tokenizer_reference = tokenizer.reference;
  return m;
}

// The weights in `weights` (a model directory or one safetensors file) of the model whose
// config.json is in `dir`, read whole.
LoadedModel read_hf_weights(const fs::path& weights, const fs::path& dir) {
  if (!has_hf_config(dir.string()))
    fail("{}: no config.json beside it to give the model's shape (training.save_final and zerotrain export write "
         "one)",
         weights.string());
  LoadedModel m{config::resolve_model_argument(dir.string()).shape, {}, "", "", {}};
  const HfWeights file(weights.string(), hf_tensors(m.shape));
  m.weights = Buffer<float>(MemCategory::Params, file.numel(), Init::Uninitialised);
  file.read(m.weights.data(), 0, file.numel());
  m.what = fmt::format("{} weights {}", kModelTypeNames.name(m.shape.model_type), weights.string());
  const ModelTokenizer tokenizer = tokenizer_of_model_directory(dir.string());
  m.tokenizer = tokenizer.path;
  m.tokenizer_reference = tokenizer.reference;
  return m;
}

}  // namespace

LoadedModel read_hf_model_dir(const std::string& dir) { return read_hf_weights(dir, dir); }

AdapterOnBase read_adapter_on_base(const std::string& dir) {
  const PeftAdapterConfig config = read_peft_adapter_config(dir);
  AdapterOnBase a;
  a.dir = dir;
  a.base = check_adapter_base(dir, config);
  a.model = read_hf_model_dir(a.base);
  a.parts.lora = config.spec;
  const std::string config_file = hf_file(dir, kPeftConfigFile);
  a.layout = with_key(config_file.c_str(), [&] { return make_training_layout(a.model.shape, a.parts); });
  const HfWeights adapters(check_peft_adapter(dir, a.model.shape, a.parts.lora), peft_tensors(a.model.shape, a.layout));
  const size_t base_total = a.model.weights.size();
  a.values.resize(a.layout.total);
  std::copy_n(a.model.weights.data(), base_total, a.values.data());
  adapters.read(a.values.data() + base_total, base_total, a.layout.total - base_total);
  if (has_tokenizer_files(dir)) {
    const ModelTokenizer tokenizer = tokenizer_of_model_directory(dir);
    a.model.tokenizer = tokenizer.path;
    a.model.tokenizer_reference = tokenizer.reference;
  }
  return a;
}

LoadedModel read_adapter_dir(const std::string& dir) {
  AdapterOnBase a = read_adapter_on_base(dir);
  const TrainedModel model{a.model.shape, a.parts, a.layout};
  ModelGroups::of_values(model, SavedForm::Model, a.values.data()).read_model(a.model.weights.data());
  a.model.what = fmt::format("PEFT adapter {} on {} (merged)", dir, a.base);
  return std::move(a.model);
}

DType inference_dtype(const std::string& option, const LoadedModel& model) {
  if (option == "auto") return model.trained_dtype;
  return dtype_from_name(option);
}

DType compute_dtype(DType dtype) { return dtype == DType::F16 ? DType::F32 : dtype; }

LoadedModel load_model(const std::string& path) {
  if (path.empty()) fail("no model given (a checkpoint directory, a model directory or a safetensors file)");
  switch (classify_path(path)) {
    case PathKind::Missing: fail("{}: no such file or directory", path);
    case PathKind::File: return read_hf_weights(path, fs::path(path).parent_path());
    case PathKind::Checkpoint: return read_checkpoint(path);
    case PathKind::ModelDir: return read_hf_model_dir(path);
    case PathKind::Adapter: return read_adapter_dir(path);
    case PathKind::OtherDir: break;
  }
  fail("{}: holds no checkpoint (meta.json or `latest`), no model.safetensors, no config.json and no "
       "adapter_config.json (expected a checkpoint directory, a model directory, a PEFT adapter directory or a "
       "safetensors file)",
       path);
}

}  // namespace zt
