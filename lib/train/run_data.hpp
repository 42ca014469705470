#pragma once
// The data of a run, opened and judged as the run reads it: by the trainer at its start and by
// --dry-run, with the same code, so that a dry run refuses what the run would refuse. data.train and
// data.val in their format (auto: by content, docs/data.md), every token against model.vocab_size,
// the tokenizer their records name against the model directory's (data.tokenizer_mismatch), the
// sampler (windows of a token stream, or rows of the samples of record data: data.packing);
// warnings for data that trains but not as meant.
#include <memory>
#include <optional>
#include <string>

#include "config/config.hpp"
#include "data/data_tokenizer.hpp"
#include "data/dataset.hpp"
#include "data/data_sampler.hpp"

namespace zt {

struct CheckpointMeta;

struct RunData {
  std::unique_ptr<TokenDataset> train, val;
  std::unique_ptr<DataSampler> train_sampler, val_sampler;
  DataTokenizer tokenizer;  // what data.train's files record
  std::optional<TokenizerReference> model_tokenizer;  // the model directory's, when it has one
  // The tokenizer the model's text is read and written with (training samples):
  // training.sample_tokenizer, else the model directory's, else the one data.train records where
  // its files are unchanged; "" when there is none.
  std::string text_tokenizer;
};

// Throws zt::BadInput naming the key and the file at the first problem (data a run cannot train
// on: exit status 2); warns on rank 0 (`rank`).
RunData open_run_data(const config::Config& config, int world_size, int rank);

// A run that resumes or starts from a checkpoint: its data must be the tokenizer's the
// checkpoint's data was made with (meta.json's data.tokenizer), as data.tokenizer_mismatch says.
void judge_against_checkpoint(const DataTokenizer& data, const CheckpointMeta& meta, const std::string& checkpoint_dir,
                              const config::Config& config, int rank);

// --dry-run: per data key, the files, their format and tokens, the range of their ids against the
// vocabulary, the tokenizer they record beside the model's, the windows or the samples and their
// rows (truncation, packing efficiency), and the epochs the steps make.
void log_data_plan(const config::Config& config, const RunData& data);

// Whether a micro-batch of this data needs its RowSegments (data.train or data.val has samples).
bool has_samples(const RunData& data);

}  // namespace zt
