#include "inference/model_tokenizer.hpp"

#include <filesystem>

#include "ckpt/checkpoint_format.hpp"
#include "hf/hf_dir.hpp"
#include "tokenizer/tokenizer_files.hpp"

namespace zt {

namespace fs = std::filesystem;

namespace {

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

ModelTokenizer tokenizer_of_checkpoint(const CheckpointMeta& meta, const config::RecordedRun& run,
                                       const std::string& checkpoint_dir) {
  const std::string run_dir = model_tokenizer_directory(run.model_path, run.init_from);
  const ModelTokenizer run_model = run_dir.empty() ? ModelTokenizer{} : tokenizer_of_model_directory(run_dir);
  ModelTokenizer found;
  if (const auto data = recorded_data_tokenizer(meta, checkpoint_dir)) {
    found.reference = TokenizerReference{*data, "the tokenizer checkpoint " + checkpoint_dir + "'s data was made with"};
    found.path = usable_tokenizer_source(*data);
  } else {
    found.reference = run_model.reference;
  }
  if (found.path.empty() && exists(run.sample_tokenizer)) found.path = run.sample_tokenizer;
  if (found.path.empty()) found.path = run_model.path;
  return found;
}

}  // namespace zt
