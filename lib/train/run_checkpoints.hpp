#pragma once
// The checkpoints a run writes (training.checkpoint_dir, save_interval, keep_last): a save every
// save_interval steps, written in the background while training goes on, and a last one at the
// end of the run, finished or interrupted, complete before the process exits.
#include <memory>
#include <optional>
#include <vector>

#include "ckpt/checkpoint_writer.hpp"
#include "config/config.hpp"
#include "data/data_sampler.hpp"
#include "data/tokenizer_identity.hpp"
#include "model/gpt.hpp"
#include "train/whole_state.hpp"
#include "zero/engine.hpp"

namespace zt {

// The flat elements each rank writes to a checkpoint, in rank order: its partition's trained
// range (so the files are spread over the ranks even at stage 0, where every rank holds all).
std::vector<Range> checkpoint_pieces(const Partition& partition);

class RunCheckpoints {
public:
  // resumed_from: the step directory the run resumed from ("" when it did not). data_tokenizer:
  // the tokenizer data.train records, written into meta.json's data block (generate, eval and export
  // find it there). Without a checkpoint_dir nothing is ever written. The staging buffer lives in
  // `device`'s pinned memory.
  // state: the engine's as the whole training layout's (train/whole_state.hpp), what is written.
  RunCheckpoints(const config::Config& config, Communicator& comm, Device& device, Engine& engine, WholeState& state,
                 const Gpt& model, const DataSampler& sampler, const std::string& resumed_from,
                 std::optional<TokenizerIdentity> data_tokenizer = std::nullopt);
  // Bytes of pinned host memory the checkpoints of `config` stage in on the rank that writes the
  // most of `partition`; 0 without a checkpoint_dir.
  static size_t staging_bytes(const config::Config& config, const Partition& partition);
  ~RunCheckpoints();

  // After training step `step` (collective): starts a save every save_interval steps
  // (training.save_strategy steps), or when `new_best` (save_strategy best), and completes the
  // save in flight once every rank has written its file.
  // Returns whether a save of `step` started.
  bool after_step(int64_t step, bool new_best = false);
  // The best checkpoint's step, which keep_last never removes.
  void keep_best(int64_t step);
  // At the end of the run (collective): the checkpoint of `step`, complete and named by `latest`.
  void finish(int64_t step);
  // After finish, at the end of a run that finished (rank 0): with keep_last 1, only the best
  // checkpoint is left, and `latest` names it, as the Trainer's save_total_limit 1 leaves it.
  void keep_only_best(int64_t best_step);
  bool enabled() const { return writer_ != nullptr; }

private:
  void save(int64_t step);
  CheckpointMeta meta(int64_t step) const;

  const config::Config& config_;
  Engine& engine_;
  WholeState& state_;
  const Gpt& model_;
  const DataSampler& sampler_;
  std::optional<TokenizerIdentity> data_tokenizer_;
  std::unique_ptr<CheckpointWriter> writer_;
  int rank_ = 0;
  int64_t last_saved_ = -1;  // the step of the last save started, or found in checkpoint_dir
};

}  // namespace zt
