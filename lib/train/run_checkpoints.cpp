#include "train/run_checkpoints.hpp"

#include <algorithm>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "ckpt/checkpoint_dir.hpp"
#include "core/printable.hpp"
#include "inference/model_tokenizer.hpp"
#include "optim/lr_schedule.hpp"

namespace zt {

namespace fs = std::filesystem;

std::vector<Range> checkpoint_pieces(const Partition& partition) {
  std::vector<Range> pieces;
  for (int r = 0; r < partition.world_size(); ++r) pieces.push_back(partition.trained(r));
  return pieces;
}

size_t RunCheckpoints::staging_bytes(const config::Config& config, const Partition& partition) {
  size_t most = 0;
  if (config.training.checkpoint_dir.empty()) return most;
  for (Range piece : checkpoint_pieces(partition)) most = std::max(most, CheckpointWriter::staging_bytes(piece));
  return most;
}

RunCheckpoints::RunCheckpoints(const config::Config& config, Communicator& comm, Device& device, Engine& engine,
                               WholeState& state, const Gpt& model, const DataSampler& sampler,
                               const std::string& resumed_from, std::optional<TokenizerIdentity> data_tokenizer)
    : config_(config), engine_(engine), state_(state), model_(model), sampler_(sampler),
      data_tokenizer_(std::move(data_tokenizer)) {
  const std::string& root = config.training.checkpoint_dir;
  if (root.empty()) return;
  rank_ = comm.rank();
  const Range mine = checkpoint_pieces(state.partition())[size_t(comm.rank())];
  writer_ = std::make_unique<CheckpointWriter>(root, config.training.keep_last, comm.control(), device, mine);
  // Resumed from a checkpoint of this directory: that step is saved already.
  std::error_code ec;
  if (!resumed_from.empty() && fs::equivalent(fs::path(resumed_from).parent_path(), root, ec))
    last_saved_ = step_of_dir_name(fs::path(resumed_from).filename().string());
}

RunCheckpoints::~RunCheckpoints() = default;

bool RunCheckpoints::after_step(int64_t step, bool new_best) {
  if (!writer_) return false;
  writer_->poll();
  const config::TrainingConfig& t = config_.training;
  const bool due = t.save_strategy == config::SaveStrategy::Best
                       ? new_best
                       : t.save_strategy == config::SaveStrategy::Steps && t.save_interval > 0 &&
                             step % t.save_interval == 0;
  if (due) save(step);
  return due;
}

void RunCheckpoints::keep_only_best(int64_t best_step) {
  if (!writer_ || config_.training.keep_last != 1 || rank_ != 0) return;
  try {
    for (const std::string& old : keep_only_checkpoint(config_.training.checkpoint_dir, best_step))
      spdlog::info("checkpoint {} deleted: training.keep_last 1 keeps only the best ({}) at the end of a run",
                   printable(old), step_dir_name(best_step));
  } catch (const std::exception& e) {  // the best is complete and named: the run's outputs stand
    spdlog::warn("{}", e.what());
  }
}

void RunCheckpoints::keep_best(int64_t step) {
  if (writer_) writer_->keep_best(step);
}

void RunCheckpoints::finish(int64_t step) {
  if (!writer_) return;
  if (step > last_saved_) save(step);
  writer_->finish();
}

void RunCheckpoints::save(int64_t step) {
  state_.gather();
  writer_->save(meta(step), state_);
  last_saved_ = step;
}

CheckpointMeta RunCheckpoints::meta(int64_t step) const {
  const config::Config& c = config_;
  CheckpointMeta m;
  m.step = step;
  m.world_size = state_.partition().world_size();
  m.stage = c.zero.stage;
  m.dtype = c.dtype();
  m.flat_params = state_.numel();
  m.padded_params = state_.partition().padded();
  m.model = config::model_json(c.model);
  m.layout = model_.whole_layout();
  const Engine::Counters counters = engine_.counters();
  m.optimizer_steps = counters.optimizer_steps;
  m.next_lr = lr_at(c.scheduler, c.optimizer.lr, counters.optimizer_steps);
  const LossScaler::State& s = counters.scaler;
  m.loss_scaler = {s.scale, s.hysteresis_left, s.iteration, s.last_overflow_iteration};
  m.data = sampler_state_to_json(sampler_.state(step));
  if (data_tokenizer_) m.data[kRecordedTokenizerKey] = to_json(*data_tokenizer_);
  m.rng = nullptr;  // nothing random after initialisation: the data order and LoRA dropout follow from the seed
  m.config = config::to_json(c);
  return m;
}

}  // namespace zt
