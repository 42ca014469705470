#include "hf/hf_dir.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "ckpt/checkpoint_dir.hpp"
#include "data/tokenizer_identity.hpp"
#include "hf/hf_writer.hpp"

namespace zt {

namespace fs = std::filesystem;

std::string hf_shard_file_name(int shard, int shards) {
  return fmt::format("{}{:05d}-of-{:05d}.safetensors", kHfShardPrefix, shard, shards);
}

bool is_hf_shard_file_name(const std::string& name) {
  constexpr std::string_view suffix = ".safetensors";
  return name.rfind(kHfShardPrefix, 0) == 0 && name.size() > suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0 &&
         name.find("-of-") != std::string::npos;
}

bool is_hf_weights_file(const std::string& name) {
  return name == kHfWeightsFile || name == kHfIndexFile || is_hf_shard_file_name(name);
}

bool is_peft_adapter_file(const std::string& name) {
  return name == kPeftConfigFile || name == kPeftWeightsFile || name == kPeftBaseRecordFile;
}

std::string hf_file(const std::string& dir, std::string_view name) { return (fs::path(dir) / name).string(); }

const std::vector<std::string>& hf_tokenizer_files() {
  static const std::vector<std::string> files = {
      "tokenizer.json",     "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
      "vocab.json",         "merges.txt",            "tokenizer.model",         "vocab.txt",
      "chat_template.jinja", "chat_template.json",   "generation_config.json"};
  return files;
}

std::vector<std::string> hf_directory_files() {
  std::vector<std::string> names = {std::string(kHfWeightsFile), std::string(kHfIndexFile), std::string(kHfConfigFile)};
  for (const auto& f : hf_tokenizer_files()) names.push_back(f);
  const size_t n = names.size();
  for (size_t i = 0; i < n; ++i) names.push_back(names[i] + ".tmp");
  return names;
}

bool has_hf_config(const std::string& dir) {
  std::error_code ec;
  return fs::is_regular_file(hf_file(dir, kHfConfigFile), ec);
}

bool is_peft_adapter_dir(const std::string& dir) {
  std::error_code ec;
  return fs::is_regular_file(hf_file(dir, kPeftConfigFile), ec);
}

bool has_hf_weights(const std::string& dir) {
  std::error_code ec;
  return fs::is_regular_file(hf_file(dir, kHfWeightsFile), ec) || fs::is_regular_file(hf_file(dir, kHfIndexFile), ec);
}

PathKind classify_path(const std::string& path) {
  std::error_code ec;
  if (path.empty() || !fs::exists(path, ec)) return PathKind::Missing;
  if (!fs::is_directory(path, ec)) return PathKind::File;
  if (is_checkpoint(path)) return PathKind::Checkpoint;
  if (is_peft_adapter_dir(path) && !has_hf_weights(path)) return PathKind::Adapter;
  if (has_hf_config(path) || has_hf_weights(path)) return PathKind::ModelDir;
  return PathKind::OtherDir;
}

std::string hf_source_directory(const std::string& model_path, const std::string& init_from) {
  if (!model_path.empty()) return model_path;
  std::error_code ec;
  if (!init_from.empty() && fs::is_directory(init_from, ec) && has_hf_config(init_from)) return init_from;
  return "";
}

std::string model_tokenizer_directory(const std::string& model_path, const std::string& init_from) {
  const std::string dir = hf_source_directory(model_path, init_from);
  std::error_code ec;
  return fs::is_directory(dir, ec) && has_tokenizer_files(dir) ? dir : "";
}

}  // namespace zt
