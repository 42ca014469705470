#include "train/run_start.hpp"

#include <spdlog/spdlog.h>

#include "ckpt/architecture_check.hpp"
#include "ckpt/checkpoint_dir.hpp"
#include "config/model_block.hpp"
#include "core/error.hpp"
#include "hf/hf_config.hpp"
#include "hf/hf_dir.hpp"
#include "model/gpt_layout.hpp"
#include "train/resume_schedule.hpp"

namespace zt {

RunStart::RunStart(const config::Config& config, const ParamLayout& layout, int rank) {
  const config::TrainingConfig& t = config.training;
  std::string step_dir = with_key("training.resume", [&] { return find_resume(t, rank); });
  if (!step_dir.empty() && layout.has_frozen() && !t.random_init()) {
    // The checkpoint holds what trains; the frozen weights come from where the run started, again.
    if (!with_key("training.init_from", [&] { return find_init(config, rank); }).empty())
      fail("training.init_from: {} is a checkpoint: with frozen parameters it names the model directory (or "
           "safetensors file) they come from, which a checkpoint of trainable state does not hold",
           t.init_from);
  } else if (!step_dir.empty()) {
    if (!t.random_init() && rank == 0)
      spdlog::info("training.init_from {} is not used: the run resumes from a checkpoint", t.init_from);
  } else if (!t.random_init()) {
    step_dir = with_key("training.init_from", [&] { return find_init(config, rank); });
    weights_only_ = !step_dir.empty();
    if (weights_only_ && layout.has_frozen())
      fail("training.init_from: {} is a checkpoint: a run with frozen parameters (training.freeze, a lora block) "
           "starts from a model directory or safetensors file",
           t.init_from);
  }
  if (!step_dir.empty()) open_checkpoint(step_dir, layout, config, rank);
}

RunStart::~RunStart() = default;

std::string RunStart::find_resume(const config::TrainingConfig& t, int rank) const {
  if (!t.resume.asked()) return "";
  if (!t.resume.latest()) return resolve_checkpoint(t.resume.path);
  if (auto latest = latest_checkpoint(t.checkpoint_dir)) return *latest;
  if (t.resume.from == config::ResumeFrom::Latest)
    fail("\"latest\": no checkpoint in {} (it holds no `latest` file); \"auto\" starts from scratch when there is none",
         t.checkpoint_dir);
  if (rank == 0) spdlog::info("training.resume auto: no checkpoint in {} yet; starting from scratch", t.checkpoint_dir);
  return "";
}

std::string RunStart::find_init(const config::Config& config, int rank) {
  const std::string& path = config.training.init_from;
  const PathKind kind = classify_path(path);
  if (kind == PathKind::Missing) fail("{}: no such file or directory", path);
  if (kind == PathKind::Checkpoint) return resolve_checkpoint(path);
  if (kind == PathKind::ModelDir && !has_hf_weights(path) && path == config.model.path)
    fail("{}: holds config.json but no weights (model.safetensors or model.safetensors.index.json) to start from, as "
         "--model DIR does by default (expected the directory with its weights; --set training.init_from=random "
         "trains the architecture from random values)",
         path);
  if (kind == PathKind::Adapter)
    fail("{}: a PEFT adapter directory, not a model to start from (lora.init_from starts the adapters from it)",
         path);
  if (kind == PathKind::OtherDir || (kind == PathKind::ModelDir && !has_hf_weights(path)))
    fail("{}: holds no model.safetensors, model.safetensors.index.json, meta.json or `latest` (expected a Hugging "
         "Face model directory, a safetensors file, or a checkpoint)",
         path);
  // The architecture is the model block's: a directory of another family would fail tensor by
  // tensor, where its config.json says it at once.
  if (kind == PathKind::ModelDir && has_hf_config(path)) {
    const ModelType type = path == config.model.path ? config.model.shape.model_type : hf_model_type(path);
    if (type != config.model.shape.model_type)
      fail(
          "{}: model_type is {}, and the model block's is {} (--model {} or model.path takes the architecture from "
          "the directory)",
          hf_file(path, kHfConfigFile), kModelTypeNames.name(type), kModelTypeNames.name(config.model.shape.model_type),
          path);
  }
  weights_ = std::make_unique<HfWeights>(path, hf_tensors(config.model.shape));
  if (rank == 0)
    spdlog::info("training.init_from {}: the weights of {} (Adam's moments, the step and the schedule start afresh)",
                 path, weights_->describe());
  return "";
}

void RunStart::open_checkpoint(const std::string& step_dir, const ParamLayout& layout, const config::Config& config,
                               int rank) {
  checkpoint_ = std::make_unique<CheckpointReader>(step_dir);
  const nlohmann::json model = config::model_json(config.model);
  check_checkpoint_model_type(step_dir, checkpoint_->meta(), model, weights_only_);
  checkpoint_->check_layout(layout);
  check_checkpoint_architecture(step_dir, checkpoint_->meta(), model, weights_only_);
  const CheckpointMeta& m = checkpoint_->meta();
  if (!weights_only_) saved_data_ = sampler_state_from_json(m.data);
  same_dtype_ = m.dtype == config.dtype();
  if (rank != 0) return;
  const std::string saved = fmt::format("step {}, saved by {} rank{} at ZeRO stage {} in {}", m.step, m.world_size,
                                        m.world_size == 1 ? "" : "s", m.stage, m.dtype);
  if (weights_only_) {
    spdlog::info("training.init_from {}: the weights of {} (Adam's moments, the step and the schedule start afresh)",
                 step_dir, saved);
    return;
  }
  const bool reshard = m.world_size != config.world_size || m.stage != config.zero.stage;
  spdlog::info("resuming from {}: {}{}; {}", step_dir, saved,
               reshard ? fmt::format(", read by {} rank{} at stage {}", config.world_size,
                                     config.world_size == 1 ? "" : "s", config.zero.stage)
                       : "",
               m.step < config.training.steps
                   ? fmt::format("training continues at step {}", m.step + 1)
                   : fmt::format("training.steps {} is reached: nothing left to train", config.training.steps));
  const ScheduleChange change = resume_schedule_change(m.config, m.next_lr, m.optimizer_steps, m.step, config);
  if (change.kind == ScheduleChange::Kind::Schedule) spdlog::warn("{}", change.message);
  if (change.kind == ScheduleChange::Kind::Length) spdlog::info("{}", change.message);
  if (const std::string batch = resume_batch_change(m.config, m.world_size, m.data, m.step, config); !batch.empty())
    spdlog::warn("{}", batch);
  if (!same_dtype_)
    spdlog::warn("{} was saved by a {} run and this one trains in {}: the fp32 master weights and Adam's moments carry "
                 "over{}",
                 step_dir, m.dtype, config.dtype(), config.fp16.enabled ? "; the fp16 loss scale starts afresh" : "");
}

void RunStart::read_into(const WholeState& state) const {
  if (checkpoint_) state.load(*checkpoint_, weights_only_);
}

int64_t RunStart::apply(Engine& engine, DataSampler& sampler) const {
  if (!checkpoint_) return 0;
  engine.publish_written_state();
  if (weights_only_) return 0;
  const CheckpointMeta& m = checkpoint_->meta();
  Engine::Counters counters = engine.counters();
  counters.optimizer_steps = m.optimizer_steps;
  if (same_dtype_) {
    const ScalerRecord& s = m.loss_scaler;
    counters.scaler = {s.scale, s.hysteresis_left, s.iteration, s.last_overflow_iteration};
  }
  engine.set_counters(counters);
  sampler.restore(saved_data_);
  return m.step;
}

}  // namespace zt
