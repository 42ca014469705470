#include "hf/peft_adapter.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "ckpt/safetensors_writer.hpp"
#include "ckpt/staged_directory.hpp"
#include "ckpt/synced_file.hpp"
#include "core/error.hpp"
#include "core/json_file.hpp"
#include "core/sha256.hpp"
#include "hf/hf_dir.hpp"

namespace zt {

namespace fs = std::filesystem;

namespace {

// The module names PEFT's target_modules holds for `spec` (all-linear written out, as PEFT saves it).
std::vector<std::string> target_names(const GptShape& shape, const LoraSpec& spec) {
  std::vector<std::string> names;
  for (const LoraSite& site : lora_sites(shape, spec)) {
    const std::string last = site.module.substr(site.module.rfind('.') + 1);
    if (std::find(names.begin(), names.end(), last) == names.end()) names.push_back(last);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The files of a base model directory that make its weights: config.json and the weight files.
std::vector<std::string> base_model_files(const std::string& dir) {
  std::vector<std::string> names = {std::string(kHfConfigFile), std::string(kHfWeightsFile), std::string(kHfIndexFile)};
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (is_hf_shard_file_name(entry.path().filename().string())) names.push_back(entry.path().filename().string());
  std::vector<std::string> present;
  for (const std::string& name : names)
    if (fs::is_regular_file(hf_file(dir, name), ec)) present.push_back(name);
  std::sort(present.begin() + 1, present.end());
  return present;
}

nlohmann::ordered_json base_model_record(const std::string& dir) {
  nlohmann::ordered_json files = nlohmann::ordered_json::array();
  for (const std::string& name : base_model_files(dir)) {
    const std::string path = hf_file(dir, name);
    files.push_back({{"name", name}, {"bytes", fs::file_size(path)}, {"sha256", sha256_of_file(path)}});
  }
  return {{"base_model", dir}, {"files", files}};
}

}  // namespace

PeftAdapterConfig read_peft_adapter_config(const std::string& dir) {
  const std::string path = hf_file(dir, kPeftConfigFile);
  const nlohmann::json j = read_json_file(path);
  if (!j.is_object()) fail("{}: {} is not an object (expected PEFT's LoraConfig)", path, show(j));
  auto value = [&](const char* key) { return j.contains(key) ? j.at(key) : nlohmann::json(nullptr); };
  auto refuse = [&](const char* key, const char* expected) {
    fail("{}: {} is {} (expected {})", path, key, show(value(key)), expected);
  };
  PeftAdapterConfig c;
  if (value("peft_type") != "LORA") refuse("peft_type", "\"LORA\"");
  if (!value("r").is_number_integer() || value("r").get<int64_t>() < 1) refuse("r", "an integer >= 1");
  c.spec.r = value("r").get<int>();
  if (!value("lora_alpha").is_number()) refuse("lora_alpha", "a number");
  c.spec.alpha = value("lora_alpha").get<double>();
  if (value("lora_dropout").is_number()) c.spec.dropout = value("lora_dropout").get<double>();
  if (value("use_rslora").is_boolean()) c.spec.rslora = value("use_rslora").get<bool>();
  const nlohmann::json targets = value("target_modules");
  if (targets.is_string()) {
    c.spec.targets = {targets.get<std::string>()};
  } else if (targets.is_array()) {
    // PEFT writes all-linear out as module names, whole or by their last part.
    for (const auto& t : targets) {
      if (!t.is_string()) refuse("target_modules", "a list of module names, or \"all-linear\"");
      const std::string name = t.get<std::string>(), last = name.substr(name.rfind('.') + 1);
      if (std::find(c.spec.targets.begin(), c.spec.targets.end(), last) == c.spec.targets.end())
        c.spec.targets.push_back(last);
    }
  } else {
    refuse("target_modules", "a list of module names, or \"all-linear\"");
  }
  if (!value("base_model_name_or_path").is_string() || value("base_model_name_or_path").get<std::string>().empty())
    refuse("base_model_name_or_path", "the base model's directory, which the adapters are added to");
  c.base_model = value("base_model_name_or_path").get<std::string>();
  return c;
}

std::string check_adapter_base(const std::string& dir, const PeftAdapterConfig& config) {
  const std::string& base = config.base_model;
  const std::string named =
      fmt::format("{}: its base model {} (adapter_config.json base_model_name_or_path)", dir, base);
  std::error_code ec;
  if (!fs::is_directory(base, ec) || !has_hf_config(base) || !has_hf_weights(base))
    fail("{} is gone (expected a model directory with config.json and its weights there)", named);
  const std::string record_path = hf_file(dir, kPeftBaseRecordFile);
  if (!fs::is_regular_file(record_path, ec)) return base;  // an adapter PEFT saved: nothing recorded to compare
  const nlohmann::json record = read_json_file(record_path);
  if (!record.contains("files") || !record["files"].is_array())
    fail("{}: expected {{\"files\": [...]}} (the base model's files as the adapter was saved)", record_path);
  for (const auto& f : record["files"]) {
    const std::string name = f.value("name", ""), path = hf_file(base, name);
    if (!fs::is_regular_file(path, ec))
      fail("{} changed since the adapter was saved: {} is gone", named, name);
    if (fs::file_size(path, ec) != f.value("bytes", uint64_t(0)) || sha256_of_file(path) != f.value("sha256", ""))
      fail("{} changed since the adapter was saved: {} is not the file it was (size or sha256)", named, name);
  }
  return base;
}

std::string peft_tensor_name(const GptShape& shape, const std::string& layout_name) {
  return std::string("base_model.model.") + (shape.model_type == ModelType::Gpt2 ? "transformer." : "") + layout_name;
}

std::vector<HfTensor> peft_tensors(const GptShape& shape, const ParamLayout& layout) {
  std::vector<HfTensor> out;
  for (const ParamGroup& g : layout.groups)
    for (const TensorSpec& t : g.tensors)
      if (lora_part(t.name) != LoraPart::None) out.push_back({peft_tensor_name(shape, t.name), t.shape, t.offset, 0});
  return out;
}

nlohmann::ordered_json peft_config_json(const GptShape& shape, const LoraSpec& spec, const std::string& base_model) {
  using ordered = nlohmann::ordered_json;
  // PEFT writes an integer alpha as an integer.
  const ordered alpha = spec.alpha == std::floor(spec.alpha) ? ordered(int64_t(spec.alpha)) : ordered(spec.alpha);
  return {{"alpha_pattern", nlohmann::ordered_json::object()},
          {"base_model_name_or_path", base_model.empty() ? ordered(nullptr) : ordered(base_model)},
          {"bias", "none"},
          {"fan_in_fan_out", shape.model_type == ModelType::Gpt2},
          {"inference_mode", true},
          {"init_lora_weights", true},
          {"layers_pattern", nullptr},
          {"layers_to_transform", nullptr},
          {"lora_alpha", alpha},
          {"lora_dropout", spec.dropout},
          {"modules_to_save", nullptr},
          {"peft_type", "LORA"},
          {"r", spec.r},
          {"rank_pattern", nlohmann::ordered_json::object()},
          {"revision", nullptr},
          {"target_modules", target_names(shape, spec)},
          {"task_type", "CAUSAL_LM"},
          {"use_dora", false},
          {"use_rslora", spec.rslora}};
}

std::string check_peft_adapter(const std::string& dir, const GptShape& shape, const LoraSpec& spec) {
  const std::string path = hf_file(dir, kPeftConfigFile);
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    fail("{}: missing (expected a PEFT adapter directory: adapter_config.json and adapter_model.safetensors)", path);
  const nlohmann::json j = read_json_file(path);
  auto value = [&](const char* key) { return j.contains(key) ? j.at(key) : nlohmann::json(nullptr); };
  auto refuse = [&](const char* key, const std::string& why) {
    fail("{}: {} is {}: {}", path, key, value(key).dump(), why);
  };
  if (value("peft_type") != "LORA") refuse("peft_type", "expected \"LORA\"");
  if (!value("r").is_number_integer() || value("r").get<int64_t>() != spec.r)
    refuse("r", fmt::format("this run's lora.r is {}", spec.r));
  if (!value("lora_alpha").is_number() || value("lora_alpha").get<double>() != spec.alpha)
    refuse("lora_alpha", fmt::format("this run's lora.alpha is {}", spec.alpha));
  if (value("use_rslora").is_boolean() && value("use_rslora").get<bool>() != spec.rslora)
    refuse("use_rslora", fmt::format("this run's lora.use_rslora is {}", spec.rslora));
  for (const char* key : {"rank_pattern", "alpha_pattern"})
    if (value(key).is_object() && !value(key).empty()) refuse(key, "per-module ranks and alphas are not implemented");
  for (const char* key : {"layers_to_transform", "modules_to_save"})
    if (!value(key).is_null()) refuse(key, "expected null (every layer adapted, no module trained whole)");
  if (value("use_dora").is_boolean() && value("use_dora").get<bool>()) refuse("use_dora", "DoRA is not implemented");
  if (value("bias").is_string() && value("bias") != "none") refuse("bias", "expected \"none\"");
  // PEFT adapts a module when a target is its name or the end of it after a dot (q_proj, or
  // model.layers.0.self_attn.q_proj as PEFT writes all-linear out): the modules the adapter's
  // targets select must be those this run adapts.
  const nlohmann::json targets = value("target_modules");
  std::vector<std::string> given;
  if (targets.is_string() && targets == "all-linear") {
    given = lora_site_names(shape.model_type);
  } else if (targets.is_array()) {
    for (const auto& t : targets)
      if (t.is_string()) given.push_back(t.get<std::string>());
  } else {
    refuse("target_modules", "expected a list of module names, or \"all-linear\"");
  }
  auto selected = [&](const std::string& module) {
    return std::any_of(given.begin(), given.end(), [&](const std::string& t) {
      return module == t || (module.size() > t.size() && module.compare(module.size() - t.size(), t.size(), t) == 0 &&
                             module[module.size() - t.size() - 1] == '.');
    });
  };
  LoraSpec every = spec;
  every.targets = {"all-linear"};
  const std::vector<LoraSite> mine = lora_sites(shape, spec);
  for (int l = 0; l < shape.n_layer; ++l)
    for (const LoraSite& site : lora_sites(shape, every)) {
      const std::string module = (shape.model_type == ModelType::Gpt2 ? "h." : "model.layers.") + std::to_string(l) +
                                 "." + site.module;
      const bool adapted =
          std::any_of(mine.begin(), mine.end(), [&](const LoraSite& s) { return s.module == site.module; });
      if (selected(module) != adapted)
        refuse("target_modules", fmt::format("it {} {}, and this run's lora.target_modules ({}) {}",
                                             adapted ? "leaves out" : "adapts", module,
                                             nlohmann::json(target_names(shape, spec)).dump(),
                                             adapted ? "adapt it" : "do not"));
    }
  return hf_file(dir, kPeftWeightsFile);
}

PeftAdapterWriter::PeftAdapterWriter(std::string out_dir, const ParamLayout& layout, const GptShape& shape,
                                     const LoraSpec& spec, HfOutput output)
    : dir_(std::move(out_dir)), shape_(shape), spec_(spec), output_(std::move(output)) {
  std::vector<SafetensorsSpec> specs;
  for (const HfTensor& t : peft_tensors(shape, layout))
    specs.push_back({t.name, output_.dtype, std::vector<uint64_t>(t.shape.begin(), t.shape.end())});
  if (specs.empty()) fail("{}: the model has no LoRA adapters to save", dir_);
  staged_ = std::make_unique<StagedDirectory>(dir_);
  const std::string path = hf_file(staged_->staging(), kPeftWeightsFile);
  file_ = std::make_unique<SafetensorsFileWriter>(path, SafetensorsPlan(std::move(specs), {{"format", "pt"}}, path));
}

PeftAdapterWriter::~PeftAdapterWriter() = default;

void PeftAdapterWriter::write_group(const ParamGroup& g, const float* values) {
  for (const TensorSpec& t : g.tensors) {
    if (lora_part(t.name) == LoraPart::None) continue;
    const float* w = values + (t.offset - g.offset);
    const std::string name = peft_tensor_name(shape_, t.name);
    if (output_.dtype == DType::F32) {
      file_->write(name, w);
      continue;
    }
    converted_.resize(t.numel());
    from_f32(output_.dtype, w, converted_.data(), t.numel());
    file_->write(name, converted_.data());
  }
}

void PeftAdapterWriter::commit() {
  file_->commit();
  std::error_code ec;
  if (!output_.tokenizer_dir.empty())
    for (const std::string& name : hf_tokenizer_files()) {
      const fs::path from = fs::path(output_.tokenizer_dir) / name;
      if (name != "generation_config.json" && fs::is_regular_file(from, ec))
        write_file_durably(hf_file(staged_->staging(), name), read_text_file(from.string()));
    }
  if (!output_.model_dir.empty() && fs::is_directory(output_.model_dir, ec))
    write_file_durably(hf_file(staged_->staging(), kPeftBaseRecordFile),
                       base_model_record(output_.model_dir).dump(2) + "\n");
  write_file_durably(hf_file(staged_->staging(), kPeftConfigFile),
                     peft_config_json(shape_, spec_, output_.model_dir).dump(2) + "\n");
  // The other files of an existing directory stay, as a model directory's do; a record of another
  // base and a model's weights do not.
  staged_->install([](const std::string& name) { return name != kPeftBaseRecordFile && !is_hf_weights_file(name); },
                   std::string(kPeftConfigFile));
}

}  // namespace zt
