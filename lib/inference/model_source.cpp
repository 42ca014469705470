#include "inference/model_source.hpp"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ckpt/checkpoint_dir.hpp"
#include "ckpt/checkpoint_reader.hpp"
#include "ckpt/safetensors.hpp"
#include "config/model_block.hpp"
#include "core/error.hpp"
#include "model/gpt_layout.hpp"

namespace zt {

namespace fs = std::filesystem;

namespace {

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  if (!in) fail("{}: cannot be read", path.string());
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    fail("{}: not valid JSON ({})", path.string(), e.what());
  }
}

GptShape shape_of_block(const nlohmann::json& block, const std::string& source) {
  return config::shape_of(config::read_model_block(block, source));
}

// The tokenizer a run named (training.sample_tokenizer of the config a checkpoint records), if
// it is still there.
std::string recorded_tokenizer(const nlohmann::json& config) {
  const nlohmann::json::json_pointer key("/training/sample_tokenizer");
  if (!config.contains(key) || !config.at(key).is_string()) return "";
  const std::string path = config.at(key).get<std::string>();
  std::error_code ec;
  return !path.empty() && fs::exists(path, ec) ? path : "";
}

LoadedModel read_checkpoint(const std::string& path) {
  const CheckpointReader ckpt(resolve_checkpoint(path));
  const CheckpointMeta& meta = ckpt.meta();
  if (!meta.config.contains("model"))
    fail("{}: its meta.json records no model block in \"config\" (a checkpoint of an older zerotrain?)", ckpt.dir());
  LoadedModel m{shape_of_block(meta.config.at("model"), ckpt.dir() + "/meta.json config"), {}, "", ""};
  const ParamLayout layout = make_gpt_layout(m.shape);
  ckpt.check_layout(layout);
  for (size_t i = 0; i < meta.shards.size(); ++i) ckpt.verify(i);
  m.weights = Buffer<float>(MemCategory::Params, layout.total, Init::Uninitialised);
  ckpt.read(StateTensor::Master, {0, layout.total}, m.weights.data());
  m.what = fmt::format("checkpoint {} (step {})", ckpt.dir(), meta.step);
  m.tokenizer = recorded_tokenizer(meta.config);
  return m;
}

// A tokenizer lying in the model's directory, as Hugging Face ships one.
std::string tokenizer_beside(const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(dir / "tokenizer.json", ec) || fs::exists(dir / "vocab.json", ec)) return dir.string();
  return "";
}

// GPT-2 weights under Hugging Face names in `file`, the shape from config.json in `dir`.
LoadedModel read_gpt2_safetensors(const fs::path& file, const fs::path& dir) {
  const fs::path config = dir / "config.json";
  std::error_code ec;
  if (!fs::exists(config, ec))
    fail("{}: no config.json beside it to give the model's shape (training.save_final and zerotrain export write "
         "one)",
         file.string());
  const nlohmann::json hf = read_json(config);
  const std::string type = hf.value("model_type", "");
  if (type != "gpt2")
    fail("{}: model_type \"{}\": reading the weights of a Hugging Face {} model is not implemented yet (GPT-2 only; a "
         "zerotrain checkpoint of any family loads)",
         config.string(), type, type.empty() ? "non-GPT-2" : type);
  // config.json's GPT-2 keys under zerotrain's model keys (docs/models.md).
  nlohmann::json block = nlohmann::json::object();
  for (const auto& k : config::hf_config_keys())
    if (k.gpt2_hf && hf.contains(k.gpt2_hf) && !hf.at(k.gpt2_hf).is_null()) block[k.key] = hf.at(k.gpt2_hf);
  block["preset"] = "custom";
  LoadedModel m{shape_of_block(block, config.string()), {}, "", ""};
  const ParamLayout layout = make_gpt_layout(m.shape);
  m.weights = Buffer<float>(MemCategory::Params, layout.total);
  load_gpt2_safetensors(file.string(), layout, m.weights.data(), m.shape.vocab_size);
  m.what = fmt::format("GPT-2 weights {}", file.string());
  m.tokenizer = tokenizer_beside(dir);
  return m;
}

}  // namespace

LoadedModel read_hf_model_dir(const std::string& dir) {
  const fs::path file = fs::path(dir) / "model.safetensors";
  std::error_code ec;
  if (!fs::exists(file, ec)) {
    const fs::path config = fs::path(dir) / "config.json";
    const std::string type = fs::exists(config, ec) ? read_json(config).value("model_type", "") : "";
    fail("{}: holds no model.safetensors{}: reading a Hugging Face model directory of sharded weights is not "
         "implemented yet (GPT-2's model.safetensors and zerotrain checkpoints load)",
         dir, type.empty() ? "" : fmt::format(" (a {} model)", type));
  }
  return read_gpt2_safetensors(file, dir);
}

LoadedModel load_model(const std::string& path) {
  std::error_code ec;
  if (path.empty()) fail("no model given (a checkpoint directory, a model directory or a safetensors file)");
  if (!fs::exists(path, ec)) fail("{}: no such file or directory", path);
  if (!fs::is_directory(path, ec)) return read_gpt2_safetensors(path, fs::path(path).parent_path());
  if (is_step_dir(path) || fs::exists(fs::path(path) / "latest", ec)) return read_checkpoint(path);
  if (fs::exists(fs::path(path) / "config.json", ec)) return read_hf_model_dir(path);
  fail("{}: holds no checkpoint (meta.json or `latest`), no model.safetensors and no config.json (expected a "
       "checkpoint directory, a model directory or a safetensors file)",
       path);
}

}  // namespace zt
