#include "train/trainer.hpp"

#include <cmath>
#include <spdlog/spdlog.h>

#include "ckpt/gpt2_export.hpp"
#include "ckpt/safetensors.hpp"
#include "comm/control_channel.hpp"
#include "config/model_block.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "optim/lr_schedule.hpp"
#include "train/data_warnings.hpp"
#include "train/engine_options.hpp"
#include "train/final_weights.hpp"
#include "train/last_line.hpp"
#include "train/micro_batch_weights.hpp"
#include "train/memory_plan.hpp"
#include "train/output_failure.hpp"
#include "train/engine_state.hpp"
#include "train/peak_flops.hpp"
#include "train/resolved_config_file.hpp"
#include "train/start_summary.hpp"
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

// Weights in and out of the Hugging Face layout are GPT-2's only so far (ckpt/safetensors.hpp).
void refuse_hf_io_beyond_gpt2(const config::Config& config, const std::string& weights_file) {
  const std::string& type = config.model.model_type;
  if (type == "gpt2") return;
  if (!weights_file.empty())
    fail("training.init_from: {}: loading the weights of a {} model from safetensors is not implemented yet (GPT-2 "
         "only; a zerotrain checkpoint of this model loads)",
         weights_file, type);
  if (!config.training.save_final.empty())
    fail("training.save_final: writing a {} model in the Hugging Face layout is not implemented yet (GPT-2 only); "
         "training.checkpoint_dir keeps its weights",
         type);
}

CommStats minus(const CommStats& a, const CommStats& b) {
  CommStats d;
  for (size_t i = 0; i < d.bytes_sent.size(); ++i) {
    d.bytes_sent[i] = a.bytes_sent[i] - b.bytes_sent[i];
    d.calls[i] = a.calls[i] - b.calls[i];
    d.seconds[i] = a.seconds[i] - b.seconds[i];
  }
  return d;
}

}  // namespace

Trainer::Trainer(const config::Config& config, Communicator& comm, const Backend& backend)
    : config_(config), comm_(comm), backend_(backend), B_(int(config.train_micro_batch_size_per_gpu)), T_(config.data.seq_len),
      GA_(int(config.gradient_accumulation_steps)) {
  // What can fail on bad input (files, shapes) happens before the first collective, and the ranks
  // agree on it: one message, every rank exits, none is left waiting in the engine's set-up.
  Buffer<float> loaded;
  std::string error;
  try {
    model_ = std::make_unique<Gpt>(config::shape_of(config.model), B_, T_, config.activation_checkpointing.recompute(),
                                   backend);
    open_data();
    sample_ = std::make_unique<TrainingSample>(config.training, config.model.vocab_size, T_);
    start_ = std::make_unique<RunStart>(config, model_->layout(), comm.rank());
    refuse_hf_io_beyond_gpt2(config, start_->weights_file());
    if (!start_->weights_file().empty()) {
      loaded = Buffer<float>(MemCategory::Buffers, model_->layout().total);
      load_gpt2_safetensors(start_->weights_file(), model_->layout(), loaded.data(), config.model.vocab_size);
    }
    if (comm.rank() == 0 && !config.training.checkpoint_dir.empty())
      prepare_checkpoint_root(config.training.checkpoint_dir);
    if (comm.rank() == 0 && !config.training.metrics.empty())
      metrics_ = MetricsWriter(config.training.metrics, !start_->resumed_from().empty());
    if (comm.rank() == 0) write_resolved_config_file(config);
    if (comm.rank() == 0 && config.csv_monitor.enabled)
      csv_ = CsvMonitor(config.csv_monitor, {config.fp16.enabled, config.wall_clock_breakdown, evaluates()},
                        config.train_batch_size);
    if (comm.rank() == 0 && config.tensorboard.enabled)
      tensorboard_ = TensorboardMonitor(config.tensorboard,
                                        {config.fp16.enabled, config.wall_clock_breakdown, evaluates()},
                                        config.train_batch_size);
    if (comm.rank() == 0) comms_ = CommsSummary(config.comms_logger);
  } catch (const std::exception& e) {
    error = e.what();
  }
  agree_on_setup(error);

  ParamInit init = [this](float* dst, size_t begin, size_t count) {
    model_->init_params(dst, begin, count, config_.training.seed);
  };
  if (!loaded.empty())
    init = [&loaded](float* dst, size_t begin, size_t count) {
      std::copy(loaded.data() + begin, loaded.data() + begin + count, dst);
    };
  if (start_->from_checkpoint())  // every element is read from the checkpoint
    init = [](float* dst, size_t, size_t count) { std::fill(dst, dst + count, 0.0f); };
  EngineOptions options = engine_options(config);
  options.fetch_order = model_->fetch_order();
  options.rank = comm.rank();
  try {
    engine_ = std::make_unique<Engine>(options, model_->layout(), comm, backend, init);
  } catch (const EngineSetupFailed& e) {
    if (*e.what()) spdlog::error("{}", e.what());  // the lowest failing rank speaks for all
    throw SetupFailed();
  }
  agree_on_setup(error_of([&] { start_->read_into(*engine_, comm.rank(), comm.world_size()); }));
  start_step_ = start_->apply(*engine_, *train_sampler_);
  checkpoints_ = std::make_unique<RunCheckpoints>(config, comm, backend.device, *engine_, *model_, *train_sampler_,
                                                  start_->resumed_from());
  peak_ = peak_flops(backend.device, dtype_from_name(config.dtype()), comm.local_size());
  // Graphs where a micro-batch queues the same work on the same buffers every time.
  if (config.training.cuda_graph && backend.device.has_graphs() && config.zero.stage <= 1 &&
      config.zero.offload_optimizer.device == "none")
    graphs_ = MicroBatchGraphs(backend.device, GA_);
}

void Trainer::open_data() {
  const auto& d = config_.data;
  train_data_ = open_dataset(d.train, d.format, config_.training.seed);
  if (!d.val.empty()) val_data_ = open_dataset(d.val, d.format, config_.training.seed + 1);
  for (auto* data : {train_data_.get(), val_data_.get()})
    if (data) data->check_vocab(config_.model.vocab_size);
  if (comm_.rank() == 0) warn_about_vocab_coverage(*train_data_, config_.model.vocab_size);
  const int W = comm_.world_size(), R = comm_.rank();
  train_sampler_ = std::make_unique<BatchSampler>(*train_data_, B_, T_, W, R, GA_, d.shuffle, config_.training.seed);
  if (val_data_) val_sampler_ = std::make_unique<BatchSampler>(*val_data_, B_, T_, W, R, 1, false, config_.training.seed);
  // One pair per micro-batch, pinned on a GPU: the copies to the device run while the host goes on,
  // and no buffer is written again before the step's end has waited for them.
  Device& dev = backend_.device;
  const MemSpace space = dev.kind() == DeviceKind::Cpu ? MemSpace::Host : MemSpace::Pinned;
  for (int micro = 0; micro < GA_; ++micro) {
    inputs_.emplace_back(dev, space, MemCategory::Activations, size_t(B_) * T_);
    targets_.emplace_back(dev, space, MemCategory::Activations, size_t(B_) * T_);
  }
  step_losses_ = Buffer<double>(dev, space, MemCategory::Activations, 1);
}

void Trainer::agree_on_setup(const std::string& error) {
  const int first = comm_.control().first_failure(!error.empty());
  if (first < 0) return;
  if (first == comm_.rank()) spdlog::error("{}", error);  // the lowest failing rank speaks for all
  throw SetupFailed();
}

// The whole training step (DESIGN.md): micro-batches of forward and backward through the engine's
// hooks, then one optimizer step, queued on the device without the host waiting for it; then the
// step's one wait, for its losses and its gradient norm.
TrainStepResult Trainer::train_step(int64_t step) {
  comm_.set_step(step);
  engine_->reset_timers();
  TrainStepResult out;
  const MicroBatchWeights weights(train_sampler_->counted_targets_in_step(step - 1), GA_ * comm_.world_size());
  backend_.model.keep_losses(true);
  for (int micro = 0; micro < GA_; ++micro) micro_batch(step, micro, weights, out.time);
  int64_t taken = engine_->optimizer_steps();
  out.lr = lr_at(config_.scheduler, config_.optimizer.lr, taken);
  timed(out.time.step, [&] {
    const auto& o = config_.optimizer;
    AdamBetas betas = betas_at(config_.scheduler, {o.beta1, o.beta2}, taken);
    engine_->queue_step(out.lr, betas.beta1, betas.beta2);
    backend_.model.take_losses_into(step_losses_.data());
    backend_.device.synchronize(backend_.device.compute());
    out.result = engine_->finish_step();
  });
  backend_.model.keep_losses(false);
  warmed_up_ = true;
  const StageTimers timers = engine_->timers();
  out.time.reduce_wait = timers.reduce_wait_s;
  out.time.gather_wait = timers.gather_wait_s;
  out.time.offload_wait = timers.offload_wait_s;
  out.time.offload_io = timers.offload_io_s;
  // The stop flags travel with the loss: every rank learns of a request on any rank in the same step.
  double sums[3] = {step_losses_[0] / GA_, StopSignals::requested() ? 1.0 : 0.0, OutputFailure::happened() ? 1.0 : 0.0};
  comm_.control().all_reduce_sum(sums, 3);
  out.loss = weights.any() ? sums[0] / comm_.world_size() : NAN;
  out.stop_requests = int(sums[1]);
  out.output_failures = int(sums[2]);
  return out;
}

// One micro-batch's forward and backward, its loss kept on the device with its weight. With
// training.cuda_graph, after the first step, a graph of them replays (captured again when the
// weight or the loss scale it holds changes).
void Trainer::micro_batch(int64_t step, int micro, const MicroBatchWeights& weights, StepBreakdown& time) {
  const int32_t* inputs = inputs_[size_t(micro)].data();
  int32_t* targets = targets_[size_t(micro)].data();
  train_sampler_->fill(step - 1, micro, inputs_[size_t(micro)].data(), targets);
  const double weight = weights.of(count_targets(targets, int64_t(B_) * T_));
  const float dloss = float(engine_->backward_scale() * weight);
  auto forward = [&] {
    engine_->begin_micro_batch();
    backend_.model.kept_loss_weight(weight > 0 ? weight : 0.0);
    model_->forward(inputs, targets, B_, T_, *engine_);
  };
  auto backward = [&] { model_->backward(*engine_, dloss); };
  if (!graphs_.enabled() || !warmed_up_) {
    timed(time.forward, forward);
    timed(time.backward, backward);
    return;
  }
  timed(time.forward, [&] {
    graphs_.launch(micro, {weight, double(dloss)}, [&] {
      forward();
      backward();
    });
  });
}

bool Trainer::evaluates() const { return val_sampler_ && config_.training.eval_interval > 0; }

double Trainer::evaluate() {
  if (!val_sampler_) return NAN;
  const int64_t batches = config_.training.eval_batches;
  int64_t counted = 0;
  for (int64_t b = 0; b < batches; ++b) counted += val_sampler_->counted_targets_in_eval(b);
  const MicroBatchWeights weights(counted, batches * comm_.world_size());
  double sum = 0;
  for (int64_t b = 0; b < batches; ++b) {
    int32_t *inputs = inputs_[0].data(), *targets = targets_[0].data();
    val_sampler_->fill_eval(b, inputs, targets);
    const double weight = weights.of(count_targets(targets, int64_t(B_) * T_));
    engine_->begin_micro_batch();
    const float loss = model_->forward(inputs, targets, B_, T_, *engine_);
    if (weight > 0) sum += loss * weight;
  }
  double mean = sum / double(batches);
  comm_.control().all_reduce_sum(&mean, 1);
  return weights.any() ? mean / comm_.world_size() : NAN;
}

SetupRecord Trainer::setup_record() {
  const auto s = MemoryLedger::instance().stats();
  // Model states in device memory per category; what lives in host memory or files is "offload".
  auto device = [&](MemCategory c) { return uint64_t(s.cur(MemSpace::Device, c)); };
  struct Held {
    uint64_t params, grads, optimizer, buffers, offload;
  };
  const Held mine{device(MemCategory::Params), device(MemCategory::Grads), device(MemCategory::Optimizer),
                  uint64_t(s.cur(MemCategory::Buffers)), uint64_t(s.offloaded())};
  const std::vector<Held> all = comm_.control().gather_all(mine);
  SetupRecord r;
  r.world_size = comm_.world_size();
  r.stage = config_.zero.stage;
  r.dtype = config_.dtype();
  r.num_params = model_->num_params();
  r.padded_params = engine_->partition().padded();
  for (int k = 0; k < comm_.world_size(); ++k) {
    const Held& m = all[size_t(k)];
    r.memory.push_back({k, m.params, m.grads, m.optimizer, m.buffers, m.offload});
  }
  return r;
}

StepRecord Trainer::step_record(int64_t step, TrainStepResult& out, double seconds, const CommStats& comm) const {
  StepRecord rec;
  rec.step = step;
  rec.loss = out.loss;
  rec.lr = out.lr;
  rec.grad_norm = out.result.grad_norm;
  rec.loss_scale = out.result.loss_scale;
  rec.skipped = out.result.skipped;
  rec.tokens = int64_t(B_) * T_ * GA_ * comm_.world_size();
  rec.step_ms = seconds * 1e3;
  rec.tokens_per_s = double(rec.tokens) / seconds;
  rec.mfu = double(model_->flops_per_token()) * rec.tokens_per_s / (peak_.flops * comm_.world_size());
  rec.comm = comm;
  if (config_.wall_clock_breakdown) {
    out.time.comm_busy = comm.seconds[size_t(CommOp::ReduceScatter)] + comm.seconds[size_t(CommOp::AllGather)];
    rec.time = out.time;
  }
  return rec;
}

// Every rank takes part (each group's weights are all-gathered in turn); rank 0 writes.
void Trainer::save_final() {
  const auto& m = config_.model;
  EngineState state(*engine_);
  save_gathered_weights(config_.training.save_final, model_->layout(),
                        {m.n_layer, m.n_head, m.d_model, m.vocab_size, m.max_seq_len},
                        dtype_from_name(config_.training.save_dtype), comm_, backend_.device, state,
                        checkpoint_pieces(engine_->partition()));
  if (comm_.rank() == 0) spdlog::info("saved final weights to {}", printable(config_.training.save_final));
}

int Trainer::run() {
  const int64_t steps = config_.training.steps;
  const bool rank0 = comm_.rank() == 0;
  SetupRecord setup = setup_record();
  StopSignals::end_setup();  // from here on a stop signal finishes the current step
  metrics_.setup(setup);
  if (rank0) log_start(setup);
  if (rank0) progress_ = ProgressLine(console_progress_mode(), steps);

  auto t_start = SteadyClock::now();
  double last_val = NAN;
  int64_t done = start_step_;
  bool interrupted = false;
  for (int64_t step = start_step_ + 1; step <= steps; ++step) {
    CommStats before = comm_.stats();
    auto t0 = SteadyClock::now();
    TrainStepResult out = train_step(step);
    double seconds = seconds_since(t0);
    done = step;
    // A stop request with the last step changes nothing: the run is complete.
    interrupted = out.stop_requests > 0 && step < steps;

    StepRecord rec = step_record(step, out, seconds, minus(comm_.stats(), before));
    metrics_.step(rec);
    csv_.step(rec);
    tensorboard_.step(rec);
    comms_.add(rec.comm);
    totals_.add_step(rec, out.time);
    progress_.update(step, rec.loss, rec.tokens, rec.tokens_per_s);
    const bool last = step == steps;
    const bool stopping = interrupted || out.output_failures > 0;
    const int64_t print_every = config_.steps_per_print;  // 0 (DeepSpeed's null): only the first and the last
    bool print = step == 1 || last || stopping || (print_every > 0 && step % print_every == 0);
    if (rank0 && print) {
      log_step(rec);
      if (rec.time) log_breakdown(*rec.time, seconds);
      comms_.log_step(step, rec.comm);
    }

    const int64_t every = config_.training.eval_interval;
    if (evaluates() && (step % every == 0 || last)) {
      last_val = evaluate();
      metrics_.eval(step, last_val);
      csv_.eval(step, last_val);
      tensorboard_.eval(step, last_val);
      totals_.add_eval(last_val);
      if (rank0) spdlog::info("eval  step {:>5} | val loss {:.4f}", step, last_val);
    }
    if (sample_->due(step, steps)) {
      const auto sample = sample_->generate(*model_, *engine_, step, [&] { engine_->begin_micro_batch(); });
      if (rank0) spdlog::info("sample step {:>5} | {} tokens: {}", step, sample.tokens, sample.text);
    }
    if (out.output_failures > 0) {
      // The checkpoint of this step is saved below, so that no step taken is lost.
      if (rank0) log_output_failure(step);
      break;
    }
    if (interrupted) {
      if (rank0) log_interrupted(step, out.stop_requests);
      break;
    }
    checkpoints_->after_step(step);
  }

  const double wall_s = seconds_since(t_start);
  progress_.finish();
  checkpoints_->finish(done);  // the last step's checkpoint, complete, and `latest` naming it
  if (!interrupted && !config_.training.save_final.empty()) save_final();
  comms_.log_total(done - start_step_);  // the steps this run trained (a resumed run started after start_step_)
  SummaryRecord summary =
      totals_.summarize(comm_, interrupted, wall_s, double(model_->flops_per_token()), peak_.flops);
  metrics_.summary(summary);
  if (rank0) log_run_summary(summary, plan_memory(config_, comm_.world_size(), backend_.model), config_.zero.stage);
  const int exit_code = OutputFailure::happened() ? kExitOutputFailed : interrupted ? kExitInterrupted : 0;
  if (rank0) log_last_line(config_, done, interrupted, exit_code);
  return exit_code;
}

void Trainer::log_start(const SetupRecord& setup) const {
  spdlog::info("model: {}, seq {} = {} parameters", describe(model_->shape()), T_, model_->num_params());
  spdlog::info("ZeRO stage {} on {} rank{}, {} (communication {}), batch {} = micro {} x accumulation {} x world {}",
               config_.zero.stage, comm_.world_size(), comm_.world_size() == 1 ? "" : "s", config_.dtype(),
               config_.communication_data_type, config_.train_batch_size, B_, GA_, comm_.world_size());
  log_data_and_optimizer(config_, *train_data_, val_data_.get());
  spdlog::info("MFU = {} FLOP/token x tokens/s / (ranks x peak); peak per rank {:.1f} GFLOP/s = {}",
               model_->flops_per_token(), peak_.flops / 1e9, peak_.explanation);
  // Measured model-state bytes per rank beside what the ZeRO formula predicts for this config.
  MemoryPlan plan = plan_memory(config_, comm_.world_size(), backend_.model);
  auto mib = [](uint64_t b) { return double(b) / 1048576.0; };
  for (auto& m : setup.memory)
    spdlog::info("memory rank {}: params {:.3f} grads {:.3f} optimizer {:.3f} offload {:.3f} MiB (formula {}: "
                 "{:.3f} {:.3f} {:.3f} {:.3f}); buffers {:.3f} MiB",
                 m.rank, mib(m.params), mib(m.grads), mib(m.optimizer), mib(m.offload), plan.formula,
                 mib(plan.params), mib(plan.grads), mib(plan.optimizer), mib(plan.offload), mib(m.buffers));
  if (config_.training.eval_interval > 0 && !val_sampler_)
    spdlog::info("no validation data (data.val is empty): training.eval_interval {} has nothing to evaluate",
                 config_.training.eval_interval);
}

void Trainer::log_step(const StepRecord& r) const {
  spdlog::info("step {:>5}/{} | loss {:.4f} | lr {:.3e} | grad norm {:.3f}{} | {:.1f} ms | {:.0f} tok/s | MFU {:.1f}%",
               r.step, config_.training.steps, r.loss, r.lr, r.grad_norm,
               r.skipped ? fmt::format(" | skipped (loss scale {})", r.loss_scale) : "", r.step_ms,
               r.tokens_per_s, 100.0 * r.mfu);
}

void Trainer::log_breakdown(const StepBreakdown& t, double step_seconds) const {
  double exposed = t.reduce_wait + t.gather_wait;
  double overlapped = t.comm_busy > 0 ? std::max(0.0, 1.0 - exposed / t.comm_busy) : 0.0;
  spdlog::info("      time (ms): forward {:.1f} | backward {:.1f} | step {:.1f} | waiting on reduce {:.1f}, on gather {:.1f} "
               "| collectives in flight {:.1f} ({:.0f}% hidden behind compute) | other {:.1f}",
               1e3 * t.forward, 1e3 * t.backward, 1e3 * t.step, 1e3 * t.reduce_wait, 1e3 * t.gather_wait,
               1e3 * t.comm_busy, 100 * overlapped, 1e3 * (step_seconds - t.forward - t.backward - t.step));
  if (t.offload_io > 0 || t.offload_wait > 0)
    spdlog::info("      offload (ms): file I/O running {:.1f} | optimizer step waiting on it and transfers {:.1f}",
                 1e3 * t.offload_io, 1e3 * t.offload_wait);
}

void Trainer::log_interrupted(int64_t step, int stop_requests) const {
  const int W = comm_.world_size();
  const int sig = StopSignals::first_signal();  // 0 when only other ranks were asked
  std::string by = sig ? fmt::format(" by {}", StopSignals::name(sig)) : "";
  spdlog::warn("interrupted{}: stopping after step {} (stop requested on {} of {} rank{}; Ctrl-C again ends the job "
               "at once)",
               by, step, stop_requests, W, W == 1 ? "" : "s");
}

void Trainer::log_output_failure(int64_t step) const {
  spdlog::error("stopped after step {}: {}", step, OutputFailure::message());
}

}  // namespace zt
