#include "train/run_data.hpp"

#include <spdlog/spdlog.h>

#include "ckpt/checkpoint_format.hpp"
#include "config/row_options.hpp"
#include "core/error.hpp"
#include "data/model_data.hpp"
#include "hf/hf_dir.hpp"
#include "inference/model_tokenizer.hpp"
#include "train/data_warnings.hpp"

namespace zt {

namespace {

TokenizerJudgement judgement_of(const config::Config& c, const std::string& key, int rank) {
  return {key, "--set data.tokenizer_mismatch=warn", c.data.tokenizer_mismatch, rank == 0};
}

std::string text_tokenizer_of(const config::Config& c, const RunData& d, const std::string& model_dir) {
  if (!c.training.sample_tokenizer.empty()) return c.training.sample_tokenizer;
  if (!model_dir.empty()) return model_dir;
  return d.tokenizer.identity ? usable_tokenizer_source(*d.tokenizer.identity) : "";
}

std::string tokenizer_line(const RunData& d) {
  const DataTokenizer& t = d.tokenizer;
  std::string line = t.identity ? describe(*t.identity) : "none recorded";
  if (!t.unrecorded.empty() && t.identity) line += fmt::format(" ({} file(s) record none)", t.unrecorded.size());
  if (!d.model_tokenizer) return line + "; the model has no tokenizer to compare it with";
  if (!t.identity)
    return line + fmt::format("; the model's: {} ({})", d.model_tokenizer->where,
                              describe_files(d.model_tokenizer->identity));
  const bool same = same_tokenizer(*t.identity, d.model_tokenizer->identity);
  return line + fmt::format("; {} {}", same ? "the same as" : "NOT", d.model_tokenizer->where);
}

void log_dataset(const char* key, const TokenDataset& data, const DataSampler& sampler, const config::Config& c) {
  spdlog::info("{}: {} ({}, {} tokens, the largest id {} < model.vocab_size {}{}); {}", key, data.path(),
               kTokenFormatNames.name(data.format()), data.size(), data.vocab_size() - 1, c.model.shape.vocab_size,
               data.has_loss_mask() ? ", a loss mask beside it" : "", sampler.describe());
}

RunData open_and_judge(const config::Config& c, int world_size, int rank) {
  const auto& d = c.data;
  const std::string model_dir = model_tokenizer_directory(c.model.path, c.training.init_from);
  const int vocab = c.model.shape.vocab_size;
  RunData r;
  if (!model_dir.empty()) r.model_tokenizer = tokenizer_of_model_directory(model_dir).reference;
  ModelData train = open_model_data(
      {d.train, d.format, c.training.seed, model_dir, vocab, judgement_of(c, "data.train", rank)}, r.model_tokenizer);
  if (!d.val.empty())
    r.val = open_model_data({d.val, d.format, c.training.seed + 1, model_dir, vocab, judgement_of(c, "data.val", rank)},
                            r.model_tokenizer, &train)
                .data;
  r.train = std::move(train.data);
  r.tokenizer = std::move(train.tokenizer);
  // A reference model computes the log-probabilities of the same ids: its tokenizer is the data's.
  const config::PreferenceConfig& p = c.preference;
  if (p.enabled && p.has_reference() && p.reference == config::PreferenceReferenceSource::Model)
    if (auto reference = tokenizer_of_model_directory(p.reference_model).reference) {
      reference->where = "the tokenizer of the reference model directory " + p.reference_model;
      judge_data_tokenizer(r.tokenizer, *reference, judgement_of(c, "preference.reference", rank));
    }
  if (rank == 0) {
    warn_about_text_data(*r.train, "data.train", vocab, model_dir, /*coverage=*/true);
    if (r.val) warn_about_text_data(*r.val, "data.val", vocab, model_dir, /*coverage=*/false);
  }
  const int B = int(c.train_micro_batch_size_per_gpu), GA = int(c.gradient_accumulation_steps);
  RowOptions rows = config::row_options(d);
  rows.chosen_prompt_counts = c.preference.enabled && c.preference.chosen_prompt_counts();
  r.train_sampler = make_sampler(*r.train, rows, B, world_size, rank, GA, d.shuffle, c.training.seed);
  if (r.val) r.val_sampler = make_sampler(*r.val, rows, B, world_size, rank, 1, false, c.training.seed);
  r.text_tokenizer = text_tokenizer_of(c, r, model_dir);
  return r;
}

}  // namespace

RunData open_run_data(const config::Config& c, int world_size, int rank) {
  try {
    return open_and_judge(c, world_size, rank);
  } catch (const BadInput&) {
    throw;
  } catch (const Error& e) {  // data the run cannot train on, named by the message: bad input
    throw BadInput(e.what());
  }
}

void judge_against_checkpoint(const DataTokenizer& data, const CheckpointMeta& meta, const std::string& checkpoint_dir,
                              const config::Config& c, int rank) {
  const std::optional<TokenizerIdentity> recorded = recorded_data_tokenizer(meta, checkpoint_dir);
  if (!recorded) return;  // an older checkpoint: the model directory's tokenizer, if any, was judged
  const TokenizerReference reference{*recorded, "the tokenizer checkpoint " + checkpoint_dir + "'s data was made with"};
  judge_data_tokenizer(data, reference, judgement_of(c, "data.train", rank));
}

bool has_samples(const RunData& d) {
  return d.train_sampler->has_samples() || (d.val_sampler && d.val_sampler->has_samples());
}

void log_data_plan(const config::Config& c, const RunData& d) {
  const DataSampler& s = *d.train_sampler;
  log_dataset("data.train", *d.train, s, c);
  if (!s.has_samples() && d.train->has_samples())
    spdlog::info("data.train: its samples are read as windows of the token stream (data.packing windows)");
  const int64_t per_step = s.units_per_step();
  std::string unit = s.unit_name();
  if (per_step == 1) unit.pop_back();  // "1 window"
  spdlog::info("data.train: {} {} per step ({}accumulation {} x world {}): {} steps = {:.3g} epochs", per_step, unit,
               s.has_samples() ? fmt::format("micro {} x ", s.batch()) : "",
               c.gradient_accumulation_steps, c.world_size, c.training.steps,
               double(c.training.steps) * double(per_step) / double(s.epoch_units()));
  spdlog::info("data.train: tokenizer {}", tokenizer_line(d));
  if (d.val) log_dataset("data.val", *d.val, *d.val_sampler, c);
  else spdlog::info("data.val: none (nothing is evaluated)");
}

}  // namespace zt
