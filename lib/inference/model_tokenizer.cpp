#include "inference/model_tokenizer.hpp"

#include <filesystem>

#include "ckpt/checkpoint_format.hpp"
#include "hf/hf_dir.hpp"
#include "tokenizer/tokenizer_files.hpp"

namespace zt {

namespace fs = std::filesystem;

namespace {

std::string recorded_string(const nlohmann::json& config, const char* pointer) {
  const nlohmann::json::json_pointer p(pointer);
  return config.contains(p) && config.at(p).is_string() ? config.at(p).get<std::string>() : "";
}

bool exists(const std::string& path) {
  std::error_code ec;
  return !path.empty() && fs::exists(path, ec);
}

}  // namespace

ModelTokenizer tokenizer_of_model_directory(const std::string& dir) {
  const std::string d = dir.empty() ? "." : dir;  // a weights file named alone lies in the working directory
  if (!has_tokenizer_files(d)) return {};
  return {d, TokenizerReference{identify_tokenizer(d), "the tokenizer of the model directory " + d}};
}

std::optional<TokenizerIdentity> recorded_data_tokenizer(const CheckpointMeta& meta,
                                                         const std::string& checkpoint_dir) {
  if (!meta.data.is_object() || !meta.data.contains(kRecordedTokenizerKey)) return std::nullopt;
  return tokenizer_identity_from_json(meta.data.at(kRecordedTokenizerKey),
                                      checkpoint_dir + "/" + std::string(kMetaFile) + " data");
}

std::string usable_tokenizer_source(const TokenizerIdentity& identity) {
  return tokenizer_files_unchanged(identity) ? identity.source : "";
}

ModelTokenizer tokenizer_of_checkpoint(const CheckpointMeta& meta, const std::string& checkpoint_dir) {
  const std::string run_dir = model_tokenizer_directory(recorded_string(meta.config, "/model/path"),
                                                        recorded_string(meta.config, "/training/init_from"));
  const ModelTokenizer run_model = run_dir.empty() ? ModelTokenizer{} : tokenizer_of_model_directory(run_dir);
  ModelTokenizer found;
  if (const auto data = recorded_data_tokenizer(meta, checkpoint_dir)) {
    found.reference = TokenizerReference{*data, "the tokenizer checkpoint " + checkpoint_dir + "'s data was made with"};
    found.path = usable_tokenizer_source(*data);
  } else {
    found.reference = run_model.reference;
  }
  if (const std::string sample = recorded_string(meta.config, "/training/sample_tokenizer");
      found.path.empty() && exists(sample))
    found.path = sample;
  if (found.path.empty()) found.path = run_model.path;
  return found;
}

}  // namespace zt
