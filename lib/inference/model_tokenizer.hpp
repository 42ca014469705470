#pragma once
// The tokenizer that goes with a model, found without being named (docs/data.md, "Which tokenizer
// made the tokens"): in a Hugging Face model directory, its tokenizer files (training.save_final
// and `zerotrain export` put them there); in a checkpoint, what its run recorded: the tokenizer its
// data was made with (meta.json's data.tokenizer, where its files are still there unchanged), else
// training.sample_tokenizer, else the tokenizer of the model directory the run started from.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "config/recorded_run.hpp"
#include "data/data_tokenizer.hpp"

namespace zt {

struct CheckpointMeta;

struct ModelTokenizer {
  std::string path;  // a tokenizer to read and write text with (a directory or a file); "" when none is found
  std::optional<TokenizerReference> reference;  // what the model's ids are known to mean
};

// The key of meta.json's data block that records the run's data tokenizer.
inline constexpr const char* kRecordedTokenizerKey = "tokenizer";

ModelTokenizer tokenizer_of_model_directory(const std::string& dir);
ModelTokenizer tokenizer_of_checkpoint(const CheckpointMeta& meta, const config::RecordedRun& run,
                                       const std::string& checkpoint_dir);

// The tokenizer a checkpoint's run recorded of its data; nothing when it recorded none (an older
// run, or data without records). Errors name meta.json.
std::optional<TokenizerIdentity> recorded_data_tokenizer(const CheckpointMeta& meta,
                                                         const std::string& checkpoint_dir);
// Where to load a recorded tokenizer from: its source, when its files are still there with the
// bytes they had; "" otherwise.
std::string usable_tokenizer_source(const TokenizerIdentity& identity);

}  // namespace zt
