#include "train/trainer.hpp"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <filesystem>

#include "ckpt/checkpoint_format.hpp"
#include "ckpt/checkpoint_reader.hpp"
#include "comm/control_channel.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/printable.hpp"
#include "data/sample_sampler.hpp"
#include "data/sampler.hpp"
#include "inference/evaluation.hpp"
#include "metrics/output_failure.hpp"
#include "optim/lr_schedule.hpp"
#include "train/engine_config.hpp"
#include "start/run_weights.hpp"
#include "train/expert_group.hpp"
#include "train/last_line.hpp"
#include "train/launcher_markers.hpp"
#include "train/micro_batch_weights.hpp"
#include "train/memory_plan.hpp"
#include "train/model_export.hpp"
#include "train/previous_run.hpp"
#include "train/run_data.hpp"
#include "train/run_sinks.hpp"
#include "train/start_summary.hpp"
#include "train/stop_messages.hpp"
#include "train/stop_signals.hpp"

namespace zt {

namespace {

// The message of what `f` throws, or "" when it succeeds.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

Trainer::Trainer(const config::Config& config, Communicator& comm, const Backend& backend)
    : config_(config),
      comm_(comm),
      backend_(backend),
      B_(int(config.train_micro_batch_size_per_gpu)),
      T_(config.data.seq_len),
      GA_(int(config.gradient_accumulation_steps)),
      rows_(int(config.micro_batch_rows())),
      best_(config.training) {
  // What can fail on bad input (files, shapes) happens before the first collective, and the ranks
  // agree on it: one message, every rank exits, none is left waiting in the engine's set-up.
  // A collective that bad input cannot fail (the config judged the group size): before anything can.
  if (config.expert_parallel.size() > 1) expert_comm_ = split_expert_group(comm, config.expert_parallel.size());
  std::string error;
  int status = kExitFailed;
  try {
    const std::string text_tokenizer = open_data();
    // The LM head's logits for the most rows it computes: the targets that count, as the data says.
    const int head_rows = planned_head_rows(*train_sampler_, val_sampler_.get());
    model_ = std::make_unique<Gpt>(trained_model_shape(config), rows_, T_, config.recompute_activations(), backend,
                                   config::trained_parts(config), kLogitsBytes, head_rows);
    if (expert_comm_) model_->set_expert_group(expert_group(*expert_comm_));
    sample_ = std::make_unique<TrainingSample>(config.training, text_tokenizer, config.model.shape.vocab_size, T_);
    start_ = std::make_unique<RunStart>(config, model_->layout(), comm.rank());
    if (const CheckpointReader* ckpt = start_->checkpoint())
      judge_against_checkpoint(data_tokenizer_, ckpt->meta(), ckpt->dir(), config, comm.rank());
    if (comm.rank() == 0 && !config.training.checkpoint_dir.empty())
      prepare_checkpoint_root(config.training.checkpoint_dir);
    plan_ = plan_memory(config, comm.world_size(), backend.model, !segments_.empty(), head_rows);
    sinks_ = open_run_sinks(config, comm.rank(), !start_->resumed_from().empty(), evaluates(), plan_);
  } catch (const std::exception& e) {
    error = e.what();
    if (dynamic_cast<const BadInput*>(&e)) status = kExitBadInput;
  }
  agree_on_setup(error, status);

  // The initial weights (a model's, an adapter's, the seeded ones) are read range by range as the
  // engine fills the parameters this rank holds. A failed read leaves zeros and is agreed on
  // below, before any step.
  agree_on_setup(error_of([&] {
    // The base model's weights are training.init_from's as RunStart opened them (none from a
    // checkpoint); a resume's adapters come from the checkpoint, not lora.init_from.
    const bool resumed = start_->from_checkpoint();
    initial_ = std::make_unique<InitialWeights>(config.model.shape, config::trained_parts(config), model_->layout(),
                                                WeightSources{"", resumed ? "" : config.lora.init_from,
                                                              config.training.seed},
                                                start_->weights());
  }));
  std::string load_error;
  ParamInit init = [this, &load_error](float* dst, size_t begin, size_t count) {
    if (load_error.empty()) load_error = error_of([&] { initial_->read(dst, begin, count); });
    if (!load_error.empty()) std::fill(dst, dst + count, 0.0f);
  };
  if (start_->from_checkpoint() && !model_->layout().has_frozen())  // every element is read from the checkpoint
    init = [](float* dst, size_t, size_t count) { std::fill(dst, dst + count, 0.0f); };
  EngineOptions options = engine_options(config);
  options.fetch_order = model_->fetch_order();
  options.rank = comm.rank();
  try {
    engine_ = std::make_unique<Engine>(options, model_->layout(), comm, backend, cpu_backend().vector, init);
  } catch (const EngineSetupFailed& e) {
    if (*e.what()) spdlog::error("{}", e.what());  // the lowest failing rank speaks for all
    throw SetupFailed();
  }
  agree_on_setup(load_error);
  // A reference model's pass runs on the values the engine was made with, before a checkpoint's are
  // read in (fp32 parameters are their own master weights, which a checkpoint fills).
  const config::PreferenceConfig& p = config.preference;
  if (p.enabled && p.has_reference() && p.reference == config::PreferenceReferenceSource::Model &&
      start_->resumed_from().empty())
    with_reference_model(init, load_error, [this] { start_preference(); });
  agree_on_setup(error_of([&] { start_->read_into(*engine_, comm.rank(), comm.world_size()); }));
  start_step_ = start_->apply(*engine_, *train_sampler_);
  if (p.enabled && !preference_) start_preference();
  // Set up, so starting afresh as asked: an earlier run's checkpoints go before this run saves any.
  agree_on_setup(error_of([&] {
    const std::string& root = config.training.checkpoint_dir;
    if (comm.rank() != 0 || !config.training.overwrite || !start_->resumed_from().empty() || root.empty()) return;
    const std::vector<std::string> removed = remove_previous_checkpoints(root);
    if (!removed.empty())
      spdlog::info("training.overwrite: starting afresh; removed the earlier run's checkpoints in {}: {}", root,
                   fmt::join(removed, ", "));
  }));
  checkpoints_ = std::make_unique<RunCheckpoints>(config, comm, backend.device, *engine_, *model_, *train_sampler_,
                                                  start_->resumed_from(), data_tokenizer_.identity);
  if (start_step_ > 0 && best_.enabled()) restore_best();
  peak_ = peak_flops(backend.device, config.training_dtype(), comm.local_size());
  // Graphs where a micro-batch queues the same work on the same buffers every time (not with LoRA
  // dropout: a graph would replay the masks it was captured with; not with expert parallelism:
  // its all-to-all is sized on the host by each step's routing).
  if (config.training.cuda_graph && backend.device.has_graphs() && config.zero.stage <= 1 && !preference_ &&
      engine_->options().offload_optimizer.device == OffloadDevice::None && !lora_dropout() && !expert_comm_)
    graphs_ = MicroBatchGraphs(backend.device, GA_);
}

std::string Trainer::open_data() {
  RunData data = open_run_data(config_, comm_.world_size(), comm_.rank());
  const bool samples = has_samples(data);
  train_data_ = std::move(data.train);
  val_data_ = std::move(data.val);
  train_sampler_ = std::move(data.train_sampler);
  val_sampler_ = std::move(data.val_sampler);
  data_tokenizer_ = std::move(data.tokenizer);
  if (train_data_->has_pairs() != config_.preference.enabled)
    throw BadInput(train_data_->has_pairs()
                       ? fmt::format("{} holds preference pairs: training on them needs a preference block (expected "
                                     "--set preference.loss_type=sigmoid, or a \"preference\" object in the config)",
                                     train_data_->path())
                       : fmt::format("preference: {} holds no preference pairs (expected a token file whose sample "
                                     "index has the pairs' magic, from zerotrain tokenize of preference records)",
                                     train_data_->path()));
  if (val_data_ && val_data_->has_pairs() != train_data_->has_pairs())
    throw BadInput(fmt::format("data.val {} {} preference pairs and data.train {} {}: both are pairs or neither is",
                               val_data_->path(), val_data_->has_pairs() ? "holds" : "holds no", train_data_->path(),
                               train_data_->has_pairs() ? "does" : "does not"));
  // One pair per micro-batch (and its samples' table), pinned on a GPU: the copies to the device
  // run while the host goes on, and no buffer is written again before the step's end has waited
  // for them.
  Device& dev = backend_.device;
  const MemSpace space = dev.kind() == DeviceKind::Cpu ? MemSpace::Host : MemSpace::Pinned;
  for (int micro = 0; micro < GA_; ++micro) {
    inputs_.emplace_back(dev, space, MemCategory::Activations, size_t(rows_) * T_);
    targets_.emplace_back(dev, space, MemCategory::Activations, size_t(rows_) * T_);
    if (samples) segments_.emplace_back(dev, space, rows_, T_);
  }
  step_losses_ = Buffer<double>(dev, space, MemCategory::Activations, 3);  // the losses, the experts' two
  return data.text_tokenizer;
}

size_t Trainer::staging_bytes(const config::Config& c, bool samples) {
  const int B = int(c.micro_batch_rows()), T = c.data.seq_len;
  const size_t per_micro = 2 * size_t(B) * size_t(T) * sizeof(int32_t) + (samples ? RowSegments::bytes(B, T) : 0);
  return size_t(c.gradient_accumulation_steps) * per_micro + 3 * sizeof(double);
}

RowSegments* Trainer::segments(int micro) { return segments_.empty() ? nullptr : &segments_[size_t(micro)]; }

double Trainer::step_flops(const StepTokens& t) const {
  const Gpt::PairFlops pair = model_->flops_per_pair();
  // The LM head computes the rows whose target counts (every row when every target does).
  const double head = double(model_->head_flops_per_row());
  return (double(model_->flops_per_token(0)) - head) * double(t.tokens) + head * double(t.counted) +
         double(pair.full) * double(t.attended) +
         double(pair.sliding) * double(t.attended_in_window);
}

void Trainer::agree_on_setup(const std::string& error, int status) {
  const int first = comm_.control().first_failure(!error.empty());
  if (first < 0) return;
  if (first == comm_.rank()) spdlog::error("{}", error);  // the lowest failing rank speaks for all
  comm_.control().broadcast(&status, sizeof status, first);  // and its exit status is every rank's
  throw SetupFailed(status);
}

// The whole training step (docs/architecture.md, "One training step"): micro-batches of forward
// and backward through the engine's hooks, then one optimizer step, queued on the device without
// the host waiting for it; then the step's one wait, for its losses and its gradient norm.
TrainStepResult Trainer::train_step(int64_t step) {
  comm_.set_step(step);
  StepClock& clock = engine_->clock();
  clock.restart();
  TrainStepResult out;
  out.tokens = train_sampler_->step_tokens(step - 1, model_->shape().sliding_window);
  const MicroBatchWeights weights(out.tokens.counted, GA_ * comm_.world_size());
  backend_.model.keep_losses(true);
  double* expert_stats = step_losses_.data() + 1;
  model_->take_expert_stats_into(expert_stats);  // the evaluations' forwards since the last step left out
  if (preference_) preference_->begin_step(out.tokens.chosen);
  for (int micro = 0; micro < GA_; ++micro) micro_batch(step, micro, weights);
  int64_t taken = engine_->optimizer_steps();
  out.lr = lr_at(config_.scheduler, config_.optimizer.lr, taken);
  clock.time(&StepBreakdown::step, [&] {
    const auto& o = config_.optimizer;
    AdamBetas betas = betas_at(config_.scheduler, {o.beta1, o.beta2}, taken);
    engine_->queue_step(out.lr, betas.beta1, betas.beta2);
    backend_.model.take_losses_into(step_losses_.data());
    model_->take_expert_stats_into(expert_stats);
    backend_.device.synchronize(backend_.device.compute());
    aux_sum_ = expert_stats[0];
    max_load_ = expert_stats[1];
    out.result = engine_->finish_step();
  });
  backend_.model.keep_losses(false);
  warmed_up_ = true;
  out.time = clock.times();
  agree_on_loss(out, weights);
  return out;
}

// The stop flags travel with the loss: every rank learns of a request on any rank in the same step.
// The load-balancing loss is each micro-batch's own (as transformers' model computes it per
// forward), averaged with equal weights as the engine averages the gradients.
CommStats Trainer::comm_stats() const {
  CommStats s = comm_.stats();
  if (expert_comm_) s += expert_comm_->stats();
  return s;
}

void Trainer::agree_on_loss(TrainStepResult& out, const MicroBatchWeights& weights) {
  const MoeShape& moe = model_->shape().moe;
  const bool aux = moe.enabled() && moe.output_router_logits;
  double sums[4] = {(step_losses_[0] + (aux ? moe.router_aux_loss_coef * aux_sum_ : 0.0)) / GA_,
                    StopSignals::requested() ? 1.0 : 0.0, OutputFailure::happened() ? 1.0 : 0.0, aux_sum_ / GA_};
  comm_.control().all_reduce_sum(sums, 4);
  out.loss = weights.any() ? sums[0] / comm_.world_size() : NAN;
  if (aux) out.aux_loss = sums[3] / comm_.world_size();
  if (moe.enabled()) {
    comm_.control().all_reduce_max(&max_load_, 1);
    out.expert_load = max_load_;
  }
  out.stop_requests = int(sums[1]);
  out.output_failures = int(sums[2]);
  if (!preference_) return;
  PreferenceSums& p = preference_->sums();
  comm_.control().all_reduce_sum(p.v.data(), p.v.size());
  out.loss = p.loss(config_.preference) + (aux ? moe.router_aux_loss_coef * *out.aux_loss : 0.0);
  out.preference = p.means(config_.preference);
}

void Trainer::start_preference() {
  const int64_t micro_batches = int64_t(GA_) * comm_.world_size();
  if (!config_.preference.has_reference()) {  // nothing to compare against: no reference pass
    preference_ = std::make_unique<PreferenceObjective>(config_.preference, PreferenceReference{}, B_, micro_batches);
    return;
  }
  const std::string resumed = start_->resumed_from();
  const std::string root =
      !resumed.empty() ? std::filesystem::path(resumed).parent_path().string() : config_.training.checkpoint_dir;
  const std::string& own_root = config_.training.checkpoint_dir;
  const PairBuffers buffers{inputs_[0].data(), targets_[0].data(), segments(0), [&] { engine_->begin_micro_batch(); }};
  const std::string source = reference_source(config_.preference);
  // The training pairs' reference, and the validation pairs' (val).
  auto reference_of = [&](const TokenDataset& data, const DataSampler& sampler, bool val) {
    PreferenceReference reference;
    if (!resumed.empty()) {
      agree_on_setup(error_of([&] {
                       reference = PreferenceReference::load(reference_logps_path(root, val), data, source);
                     }),
                     kExitBadInput);
      // This run's checkpoints carry it on, wherever they go.
      if (comm_.rank() == 0 && !own_root.empty() && !std::filesystem::exists(reference_logps_path(own_root, val))) {
        std::filesystem::create_directories(own_root);
        reference.save(reference_logps_path(own_root, val), data, source);
      }
      return reference;
    }
    // A reference model has no adapters either.
    const bool adapters_off = config_.preference.reference == config::PreferenceReferenceSource::AdaptersOff ||
                              (config_.preference.reference == config::PreferenceReferenceSource::Model &&
                               config_.lora.enabled);
    model_->set_adapters_off(adapters_off);
    reference = PreferenceReference::compute(*model_, *engine_, comm_, dynamic_cast<const SampleSampler&>(sampler),
                                             data, buffers);
    model_->set_adapters_off(false);
    if (comm_.rank() == 0 && !root.empty()) {
      std::filesystem::create_directories(root);
      reference.save(reference_logps_path(root, val), data, source);
    }
    if (comm_.rank() == 0)
      spdlog::info("preference: the reference log-probabilities of {} {}pairs computed in one forward pass{}{}",
                   reference.pairs(), val ? "validation " : "", reference_pass_words(config_.preference),
                   root.empty() ? "" : fmt::format(", kept in {}", reference_logps_path(root, val)));
    return reference;
  };
  PreferenceReference train = reference_of(*train_data_, *train_sampler_, false);
  if (evaluates()) val_reference_ = reference_of(*val_data_, *val_sampler_, true);
  preference_ = std::make_unique<PreferenceObjective>(config_.preference, std::move(train), B_, micro_batches);
}

void Trainer::with_reference_model(const ParamInit& own, const std::string& own_error,
                                   const std::function<void()>& pass) {
  const config::Config& c = config_;
  std::unique_ptr<InitialWeights> reference;
  agree_on_setup(error_of([&] {
                   reference = std::make_unique<InitialWeights>(
                       c.model.shape, config::trained_parts(c), model_->layout(),
                       WeightSources{c.preference.reference_model, "", c.training.seed, "preference.reference"});
                 }),
                 kExitBadInput);
  std::string error;
  engine_->reinitialize([&](float* dst, size_t begin, size_t count) {
    if (error.empty()) error = error_of([&] { reference->read(dst, begin, count); });
    if (!error.empty()) std::fill(dst, dst + count, 0.0f);
  });
  agree_on_setup(error);
  reference.reset();
  pass();
  engine_->reinitialize(own);
  agree_on_setup(own_error);
}

// One micro-batch's forward and backward, its loss kept on the device with its weight. With
// training.cuda_graph, after the first step, a graph of them replays (captured again when the
// weight or the loss scale it holds changes, or the micro-batch's shape: padding to its longest row,
// and the rows the LM head computes, those whose target counts).
void Trainer::micro_batch(int64_t step, int micro, const MicroBatchWeights& weights) {
  int32_t* inputs = inputs_[size_t(micro)].data();
  int32_t* targets = targets_[size_t(micro)].data();
  RowSegments* rows = train_sampler_->has_samples() ? segments(micro) : nullptr;
  const BatchShape shape = train_sampler_->fill_micro_batch(step - 1, micro, inputs, targets, rows);
  const int64_t counted = count_targets(targets, shape.tokens());
  const double weight = weights.of(counted);
  const float dloss = float(engine_->backward_scale() * weight);
  // LoRA dropout's masks: one per micro-batch of each rank, the same again when a resumed run
  // redoes the step.
  if (lora_dropout())  // (the masks hash the seed again: any distinct numbers do)
    model_->set_dropout_seed(config_.training.seed * 0x9E3779B97F4A7C15ull + (uint64_t(step) << 32) +
                             (uint64_t(micro) << 16) + uint64_t(comm_.rank()));
  StepClock& clock = engine_->clock();
  auto forward = [&] {
    engine_->begin_micro_batch();
    backend_.model.kept_loss_weight(weight > 0 && !preference_ ? weight : 0.0);
    model_->forward(inputs, targets, shape.batch, shape.seq, *engine_, rows);
  };
  if (preference_) {  // the targets' weights come from the pairs' log-probabilities of this forward
    clock.time(&StepBreakdown::forward, forward);
    const auto& sampler = dynamic_cast<const SampleSampler&>(*train_sampler_);
    const std::vector<int64_t> pairs = sampler.micro_batch_pairs(step - 1, micro);
    const float* target_weights =
        preference_->micro_batch(*model_, targets, shape, pairs, sampler.prompt_targets(pairs));
    const float scale = float(engine_->backward_scale());
    clock.time(&StepBreakdown::backward, [&] { model_->backward(*engine_, scale, target_weights); });
    return;
  }
  // Every micro-batch's load-balancing loss weighs the same, whatever its targets.
  auto backward = [&] { model_->backward(*engine_, dloss, nullptr, float(engine_->backward_scale())); };
  if (!graphs_.enabled() || !warmed_up_) {
    clock.time(&StepBreakdown::forward, forward);
    clock.time(&StepBreakdown::backward, backward);
    model_->set_dropout_seed(std::nullopt);  // evaluation and samples run without dropout
    return;
  }
  clock.time(&StepBreakdown::forward, [&] {
    graphs_.launch(micro, {weight, double(dloss), shape.batch, shape.seq, counted}, [&] {
      forward();
      backward();
    });
  });
}

bool Trainer::lora_dropout() const { return config_.lora.enabled && config_.lora.dropout > 0; }

bool Trainer::evaluates() const {
  return val_sampler_ && config_.training.eval_interval > 0 &&
         config_.training.eval_strategy != config::EvalStrategy::No;
}

// The mean over the targets that count in training.eval_batches micro-batches
// (inference/evaluation.hpp).
double Trainer::evaluate() {
  if (!val_sampler_) return NAN;
  if (preference_) return evaluate_preference();
  const int64_t batches = val_sampler_->eval_batches(config_.training.eval_batches);
  const LossSums share = evaluate_batches(*model_, *engine_, *val_sampler_, batches,
                                          {inputs_[0].data(), targets_[0].data(), segments(0)},
                                          [&] { engine_->begin_micro_batch(); });
  double sums[4] = {share.loss, share.counted, share.aux, share.aux_batches};
  comm_.control().all_reduce_sum(sums, 4);
  const double loss = sums[1] > 0 ? sums[0] / sums[1] : NAN;
  // As transformers' forward adds it (the Trainer's eval_loss): each micro-batch's, equal weights.
  eval_aux_loss_ = sums[3] > 0 ? std::optional(sums[2] / sums[3]) : std::nullopt;
  return eval_aux_loss_ ? loss + model_->shape().moe.router_aux_loss_coef * *eval_aux_loss_ : loss;
}

// The mean pair loss of the validation pairs, as TRL's eval_loss; the rewards' means over them
// (eval_preference_) in the eval record.
double Trainer::evaluate_preference() {
  const int64_t batches = val_sampler_->eval_batches(config_.training.eval_batches);
  PreferenceSums sums = preference_->evaluate(
      *model_, *engine_, dynamic_cast<const SampleSampler&>(*val_sampler_), batches, val_reference_,
      {inputs_[0].data(), targets_[0].data(), segments(0), [&] { engine_->begin_micro_batch(); }});
  comm_.control().all_reduce_sum(sums.v.data(), sums.v.size());
  eval_preference_ = sums.means(config_.preference);
  return sums.loss(config_.preference);
}

SetupRecord Trainer::setup_record() {
  SetupRecord r;
  r.world_size = comm_.world_size();
  r.stage = config_.zero.stage;
  r.dtype = config_.dtype();
  r.num_params = model_->num_params();
  r.padded_params = engine_->partition().padded();
  r.memory = gather_setup_memory(comm_);
  return r;
}

StepRecord Trainer::step_record(int64_t step, const TrainStepResult& out, double seconds,
                                const CommStats& comm) const {
  StepRecord rec;
  rec.step = step;
  rec.loss = out.loss;
  rec.preference = out.preference;
  rec.lr = out.lr;
  if (config_.zero.compute_grad_norm) rec.grad_norm = out.result.grad_norm;
  rec.aux_loss = out.aux_loss;
  rec.expert_load = out.expert_load;
  rec.loss_scale = out.result.loss_scale;
  rec.skipped = out.result.skipped;
  rec.tokens = out.tokens.tokens;
  rec.row_tokens = out.tokens.row_tokens;
  rec.flops = step_flops(out.tokens);
  rec.step_ms = seconds * 1e3;
  rec.tokens_per_s = double(rec.tokens) / seconds;
  rec.mfu = rec.flops / seconds / (peak_.flops * comm_.world_size());
  rec.comm = comm;
  rec.time = out.time;
  rec.time.comm_busy = comm.seconds[size_t(CommOp::ReduceScatter)] + comm.seconds[size_t(CommOp::AllGather)];
  rec.breakdown = config_.wall_clock_breakdown;
  return rec;
}

// Every rank takes part (each group's weights are all-gathered in turn); rank 0 writes.
void Trainer::save_final() {
  const TrainedModel trained{config_.model.shape, config::trained_parts(config_), model_->layout()};
  save_gathered_weights(config_.training.save_final, final_form(config_), trained,
                        final_weights_output(config_, data_tokenizer_.identity), comm_, backend_.device, *engine_,
                        checkpoint_pieces(engine_->train_partition()), *initial_);
  if (comm_.rank() == 0) spdlog::info("saved final weights to {}", printable(config_.training.save_final));
}

bool Trainer::judge_evaluation(int64_t step, double val_loss, bool ends_here, bool& new_best) {
  const BestModel::Verdict v = best_.evaluated(step, val_loss);
  new_best = v.new_best;
  // The end saves the checkpoint of the step the run ends at.
  const bool ends = ends_here || v.stop;
  if (new_best && ends && checkpoints_->enabled()) {
    best_checkpoint_ = step;
    checkpoints_->keep_best(step);
  }
  const config::TrainingConfig& t = config_.training;
  const bool saved =
      checkpoints_->enabled() &&
      (ends || t.save_strategy == config::SaveStrategy::Best ||
       (t.save_strategy == config::SaveStrategy::Steps && t.save_interval > 0 && step % t.save_interval == 0));
  if (comm_.rank() == 0 && new_best)
    spdlog::info("new best: {}{}", best_.describe_best(),
                 saved ? "; its checkpoint is kept" : checkpoints_->enabled() ? " (no checkpoint at this step)" : "");
  return v.stop;
}

void Trainer::restore_best() {
  const config::TrainingConfig& t = config_.training;
  double best[3] = {-1, 0, 0};  // step, metric, whether its checkpoint is there
  if (comm_.rank() == 0 && !t.metrics.empty()) {
    BestModel restored(t);
    for (const auto& [step, metric] : recorded_evaluations(t.metrics, start_step_)) restored.restore(step, metric);
    if (const auto step = restored.best_step()) {
      std::error_code ec;
      best[0] = double(*step);
      best[1] = restored.best_metric();
      best[2] = !t.checkpoint_dir.empty() &&
                std::filesystem::is_directory(std::filesystem::path(t.checkpoint_dir) / step_dir_name(*step), ec);
    }
  }
  comm_.control().broadcast(best, sizeof best, 0);  // every rank judges the evaluations to come alike
  if (best[0] < 0) return;
  const int64_t step = int64_t(best[0]);
  best_.restore(step, best[1]);
  if (best[2] != 0) {
    best_checkpoint_ = step;
    checkpoints_->keep_best(step);
  }
  if (comm_.rank() == 0)
    spdlog::info("best so far: {} (from {}){}", best_.describe_best(), printable(t.metrics),
                 best[2] != 0 ? "; its checkpoint is kept" : "");
}

void Trainer::load_best_checkpoint(int64_t step) {
  const std::string dir = (std::filesystem::path(config_.training.checkpoint_dir) / step_dir_name(step)).string();
  agree_on_setup(error_of([&] {
    const CheckpointReader best(dir);
    load_state(best, *engine_, /*weights_only=*/true, comm_.rank(), comm_.world_size());
  }));
  engine_->publish_written_state();
  if (comm_.rank() == 0)
    spdlog::info("load_best_model_at_end: the final model is the best checkpoint's, {} ({})", printable(dir),
                 best_.describe_best());
}

int Trainer::run() {
  const int64_t steps = config_.training.steps;
  const bool rank0 = comm_.rank() == 0;
  SetupRecord setup = setup_record();
  StopSignals::end_setup();  // from here on a stop signal finishes the current step
  if (rank0)
    log_run_start(config_, setup, *model_, peak_, plan_, *train_data_, *train_sampler_, val_data_.get());
  sinks_.setup(setup);

  auto t_start = SteadyClock::now();
  int64_t done = start_step_;
  bool interrupted = false;
  std::string early_stop;  // why early stopping ended the run, "" when it did not
  for (int64_t step = start_step_ + 1; step <= steps; ++step) {
    CommStats before = comm_stats();
    auto t0 = SteadyClock::now();
    TrainStepResult out = train_step(step);
    double seconds = seconds_since(t0);
    done = step;
    // A stop request with the last step changes nothing: the run is complete.
    interrupted = out.stop_requests > 0 && step < steps;
    const bool last = step == steps;
    const bool stopping = interrupted || out.output_failures > 0;

    StepRecord rec = step_record(step, out, seconds, comm_stats() - before);
    const int64_t log_every = config_.training.logging_steps;  // 0: only the first and the last
    rec.logged = step == 1 || last || stopping || (log_every > 0 && step % log_every == 0);
    totals_.add_step(rec);
    sinks_.step(rec);

    bool new_best = false, stopped_early = false;
    if (evaluates() && (step % config_.training.eval_interval == 0 || last)) {
      const double val_loss = evaluate();
      const EvalRecord eval{step, val_loss, eval_preference_, eval_aux_loss_};
      totals_.add_eval(eval);
      sinks_.eval(eval);
      stopped_early = judge_evaluation(step, val_loss, last || stopping, new_best) && !last;
    }
    if (sample_->due(step, steps)) {
      const auto sample = sample_->generate(*model_, *engine_, step, [&] { engine_->begin_micro_batch(); });
      sinks_.sample({step, sample.tokens, sample.text});
    }
    if (out.output_failures > 0) {
      // The checkpoint of this step is saved below, so that no step taken is lost.
      if (rank0) log_output_failure(step);
      break;
    }
    if (interrupted) {
      if (rank0) log_interrupted(step, out.stop_requests, comm_.world_size());
      break;
    }
    if (checkpoints_->after_step(step, new_best) && new_best) {
      best_checkpoint_ = step;
      checkpoints_->keep_best(step);
    }
    if (stopped_early) {
      early_stop = best_.early_stop_reason();
      if (rank0) spdlog::info("early stopping at step {}: {}", step, early_stop);
      break;
    }
  }

  const double wall_s = seconds_since(t_start);
  checkpoints_->finish(done);  // the last step's checkpoint, complete, and `latest` naming it
  if (!interrupted && config_.training.load_best_model_at_end) {
    if (!best_checkpoint_) {
      if (rank0)
        spdlog::warn("load_best_model_at_end: no checkpoint holds a best evaluation; the final model is step {}'s",
                     done);
    } else if (*best_checkpoint_ != done) {
      load_best_checkpoint(*best_checkpoint_);
    } else if (rank0) {
      spdlog::info("load_best_model_at_end: the last step is the best ({})", best_.describe_best());
    }
  }
  if (!interrupted && !config_.training.save_final.empty()) save_final();
  if (!interrupted && !OutputFailure::happened() && best_checkpoint_) checkpoints_->keep_only_best(*best_checkpoint_);
  SummaryRecord summary = totals_.summarize(comm_, interrupted, wall_s, peak_.flops);
  summary.samples = train_sampler_->has_samples();
  sinks_.summary(summary);
  const int exit_code = OutputFailure::happened() ? kExitFailed : interrupted ? kExitInterrupted : 0;
  if (rank0) log_last_line(config_, done, interrupted, exit_code, early_stop, best_.describe_best());
  return exit_code;
}

}  // namespace zt
