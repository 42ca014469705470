#pragma once
// The trainer: config + model + engine + data, and the loop. train_step() is the whole training
// step (docs/architecture.md, "One training step") in one function; what the run records goes to
// its metrics sinks (train/run_sinks.hpp).
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "comm/communicator.hpp"
#include "config/config.hpp"
#include "core/exit_status.hpp"
#include "data/data_tokenizer.hpp"
#include "data/data_sampler.hpp"
#include "data/dataset.hpp"
#include "inference/training_sample.hpp"
#include "kernels/backend.hpp"
#include "metrics/peak_flops.hpp"
#include "metrics/run_totals.hpp"
#include "metrics/sink.hpp"
#include "model/gpt.hpp"
#include "train/micro_batch_graphs.hpp"
#include "train/memory_plan.hpp"
#include "train/micro_batch_weights.hpp"
#include "start/run_weights.hpp"
#include "train/best_model.hpp"
#include "train/preference.hpp"
#include "train/run_checkpoints.hpp"
#include "train/run_start.hpp"
#include "zero/engine.hpp"

namespace zt {

// One training step as every rank agrees on it.
struct TrainStepResult {
  double loss = 0;  // mean over the targets that count on all ranks and micro-batches; NaN without any
  // (with experts and output_router_logits, plus router_aux_loss_coef times aux_loss)
  std::optional<double> aux_loss, expert_load;  // models with experts (StepRecord's)
  StepTokens tokens;  // what the step read on all ranks
  UpdateResult result;
  std::optional<PreferenceMetrics> preference;  // preference training: the means over the step's pairs
  double lr = 0;
  int stop_requests = 0;  // ranks that received a stop signal (Ctrl-C, SIGTERM, SIGUSR1) by this step
  int output_failures = 0;  // ranks that could not write an output (metrics/output_failure.hpp) by this step
  StepBreakdown time;  // where the step's time went, in seconds
};

// Set-up failed on some rank; the error was logged once. Every rank throws it, with the exit
// status of the rank that logged it: kExitBadInput for input that does not fit (zt::BadInput), else
// kExitFailed.
struct SetupFailed : std::exception {
  int status = kExitFailed;
  explicit SetupFailed(int status = kExitFailed) : status(status) {}
  const char* what() const noexcept override { return "set-up failed"; }
};

class Trainer {
public:
  Trainer(const config::Config& config, Communicator& comm, const Backend& backend = cpu_backend());
  int run();
  // Bytes of the tokens the trainer stages for the device (one inputs and targets pair per
  // micro-batch, and with samples their RowSegments) and of the step's kept loss: activations in
  // host or pinned memory.
  static size_t staging_bytes(const config::Config& config, bool samples = false);

  TrainStepResult train_step(int64_t step);  // step counts from 1
  // Mean val loss over the targets that count (training.eval_batches micro-batches), plus with
  // output_router_logits router_aux_loss_coef times eval_aux_loss(); with a preference block, the
  // mean loss of the validation pairs.
  double evaluate();
  std::optional<double> eval_aux_loss() const { return eval_aux_loss_; }  // the last evaluate()'s mean
  bool evaluates() const;                 // validation data and an eval_interval
  Engine& engine() { return *engine_; }
  Gpt& model() { return *model_; }
  int64_t start_step() const { return start_step_; }  // the step a resumed run continues after (0: fresh)

private:
  std::string open_data();  // returns the tokenizer the model's text is read and written with, or ""
  void agree_on_setup(const std::string& error, int status = kExitFailed);
  void micro_batch(int64_t step, int micro, const MicroBatchWeights& weights);
  // The micro-batch's RowSegments, or null for windows (every row one sample).
  RowSegments* segments(int micro);
  // The model FLOPs of a step that read `tokens`: per token, and per query-key pair of a sample.
  double step_flops(const StepTokens& tokens) const;
  SetupRecord setup_record();
  StepRecord step_record(int64_t step, const TrainStepResult& out, double seconds, const CommStats& comm) const;
  void save_final();
  // load_best_model_at_end: the best checkpoint's weights become the parameters (collective).
  void load_best_checkpoint(int64_t step);
  // A resumed run's best so far, from its metrics file (rank 0 reads it; collective).
  void restore_best();
  // After the evaluation of `step`: the best so far and early stopping (train/best_model.hpp).
  // ends_here: the run ends at this step, whose checkpoint the end saves. Returns whether early
  // stopping ends the run.
  bool judge_evaluation(int64_t step, double val_loss, bool ends_here, bool& new_best);
  bool lora_dropout() const;  // adapters with dropout train this run
  // Preference training: the reference log-probabilities, computed or read back (collective).
  void start_preference();
  // preference.reference a model directory: its weights in the parameters' place while `pass` runs,
  // then the run's own from `own` again (own_error: what reading them failed with).
  void with_reference_model(const ParamInit& own, const std::string& own_error, const std::function<void()>& pass);
  double evaluate_preference();
  // The step's loss (and preference metrics) and the stop flags, as all ranks agree on them.
  void agree_on_loss(TrainStepResult& out, const MicroBatchWeights& weights);
  // What this rank's communicators sent so far: the world's and its expert group's.
  CommStats comm_stats() const;

  const config::Config& config_;
  Communicator& comm_;
  const Backend& backend_;
  int B_, T_, GA_;
  int rows_;  // rows of a micro-batch: B_, or 2·B_ for preference pairs
  std::unique_ptr<Communicator> expert_comm_;  // expert parallelism's group (train/expert_group.hpp), or null
  std::unique_ptr<Gpt> model_;
  std::unique_ptr<TokenDataset> train_data_, val_data_;
  std::unique_ptr<DataSampler> train_sampler_, val_sampler_;
  DataTokenizer data_tokenizer_;  // what data.train's files record of the tokenizer that made them
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<RunStart> start_;               // training.resume / training.init_from
  std::unique_ptr<InitialWeights> initial_;       // where the parameters start (frozen ones stay there)
  int64_t start_step_ = 0;
  std::unique_ptr<RunCheckpoints> checkpoints_;  // training.checkpoint_dir
  BestModel best_;                                // training.metric_for_best_model, early stopping
  std::optional<int64_t> best_checkpoint_;        // the step of the best checkpoint saved
  std::unique_ptr<TrainingSample> sample_;         // training.sample_every
  std::vector<Buffer<int32_t>> inputs_, targets_;  // per micro-batch
  std::vector<RowSegments> segments_;              // per micro-batch, when the data has samples
  Buffer<double> step_losses_;                      // the step's kept losses, read once per step
  double aux_sum_ = 0, max_load_ = 0;  // the step's load-balancing losses and busiest expert (experts only)
  std::unique_ptr<PreferenceObjective> preference_;  // the preference block
  PreferenceReference val_reference_;                // of the validation pairs
  std::optional<PreferenceMetrics> eval_preference_;  // the last evaluation's means over them
  std::optional<double> eval_aux_loss_;               // the last evaluation's load-balancing loss
  MicroBatchGraphs graphs_;                         // training.cuda_graph
  bool warmed_up_ = false;                          // a step ran: every buffer has its size
  MemoryPlan plan_;     // made once: the start line and the metrics' setup record show it
  MetricsSinks sinks_;  // rank 0's outputs (train/run_sinks.hpp)
  RunTotals totals_;    // for the summary at the end
  PeakFlops peak_;      // per rank, for MFU
};

}  // namespace zt
