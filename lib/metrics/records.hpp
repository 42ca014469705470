#pragma once
// The records of a run, as every sink receives them (metrics/sink.hpp): the set-up, each
// optimizer step, each evaluation's loss, each sample of text, and the summary at the end.
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "comm/communicator.hpp"
#include "core/step_clock.hpp"

namespace zt {

struct RankMemory {
  int rank = 0;
  uint64_t params = 0, grads = 0, optimizer = 0, buffers = 0, offload = 0;
};

struct SetupRecord {
  int world_size = 1;
  int stage = 0;
  std::string dtype;
  uint64_t num_params = 0, padded_params = 0;
  std::vector<RankMemory> memory;
};

// ORPO's own metrics (TRL's ORPOTrainer): the chosen sequences' mean NLL (nll_loss), the mean of
// log σ of the pairs' log-odds ratios (log_odds_ratio) and of the ratios (log_odds_chosen).
struct OddsRatioMetrics {
  double nll_loss = 0, log_odds_ratio = 0, log_odds_chosen = 0;
};

// Preference training's means over a step's pairs (TRL's names: rewards/chosen, ...): a reward is
// β · (logp - logp of the reference), an accuracy whether the chosen reward beats the rejected one.
struct PreferenceMetrics {
  double rewards_chosen = 0, rewards_rejected = 0, rewards_accuracies = 0, rewards_margins = 0;
  double logps_chosen = 0, logps_rejected = 0;
  std::optional<OddsRatioMetrics> odds_ratio;  // loss_type orpo
  // (name, value) in the order of the metrics file.
  std::vector<std::pair<const char*, double>> fields() const {
    std::vector<std::pair<const char*, double>> f = {
        {"rewards/chosen", rewards_chosen}, {"rewards/rejected", rewards_rejected},
        {"rewards/accuracies", rewards_accuracies}, {"rewards/margins", rewards_margins},
        {"logps/chosen", logps_chosen}, {"logps/rejected", logps_rejected}};
    if (odds_ratio)
      f.insert(f.end(), {{"nll_loss", odds_ratio->nll_loss},
                         {"log_odds_ratio", odds_ratio->log_odds_ratio},
                         {"log_odds_chosen", odds_ratio->log_odds_chosen}});
    return f;
  }
};

struct StepRecord {
  int64_t step = 0;
  double loss = 0, lr = 0, loss_scale = 1;
  std::optional<double> grad_norm;  // none: not computed (zero_optimization.compute_grad_norm false)
  // Models with experts: the load-balancing loss (mean over micro-batches and ranks, before its
  // coefficient; none unless output_router_logits) and the busiest expert's tokens over the mean
  // (the largest over layers, micro-batches and ranks).
  std::optional<double> aux_loss, expert_load;
  bool skipped = false;
  int64_t tokens = 0;      // the samples' tokens, all ranks (windows: every token)
  int64_t row_tokens = 0;  // the rows' tokens, padding included
  double flops = 0;        // model FLOPs of the step, all ranks (MFU's numerator)
  double step_ms = 0, tokens_per_s = 0, mfu = 0;
  CommStats comm;      // bytes rank 0 sent in this step
  StepBreakdown time;  // where the step's time went on rank 0; shown ("time_ms") when `breakdown`
  bool breakdown = false;  // wall_clock_breakdown
  bool logged = false;     // rank 0 logs a line for this step (training.logging_steps, the first, the last)
  std::optional<PreferenceMetrics> preference;  // preference training's metrics of the step
};

// An evaluation: the mean loss over the validation targets that count (preference training: the
// mean pair loss, TRL's eval_loss) and preference training's means over the validation pairs.
struct EvalRecord {
  int64_t step = 0;
  double val_loss = NAN;
  std::optional<PreferenceMetrics> preference;
  // With output_router_logits: the load-balancing loss in val_loss, before its coefficient.
  std::optional<double> aux_loss;
};

// What the model wrote at a step (training.sample_every).
struct SampleRecord {
  int64_t step = 0;
  int tokens = 0;    // new tokens (fewer than training.sample_tokens when the text ended)
  std::string text;  // training.sample_prompt and its continuation
};

// One rank's peaks in bytes: the ledger's per category (model states in device memory, what is
// offloaded to host memory or files, activations, transient buffers in use and kept for reuse),
// and the process's resident set as the operating system counts it.
struct RankPeakMemory {
  int rank = 0;
  uint64_t params = 0, grads = 0, optimizer = 0, offload = 0, activations = 0, buffers = 0, cached = 0;
  uint64_t files = 0;     // the part of offload held in files (NVMe), not in memory
  uint64_t resident = 0;  // VmHWM of /proc/self/status
  // (name, bytes) in the order of the summary record and table.
  std::array<std::pair<const char*, uint64_t>, 9> fields() const {
    return {{{"params", params}, {"grads", grads}, {"optimizer", optimizer}, {"offload", offload},
             {"files", files}, {"activations", activations}, {"buffers", buffers}, {"cached", cached},
             {"resident", resident}}};
  }
};

// The last record of a run (docs/architecture.md, "Metrics").
struct SummaryRecord {
  int64_t steps = 0;  // optimizer steps taken (step records written)
  bool interrupted = false;  // stopped early by a stop signal
  int64_t tokens = 0;  // trained on, all ranks: the sum of the step records' tokens
  int64_t row_tokens = 0;  // the rows' tokens, padding included
  bool samples = false;    // rows of samples (record data), not windows
  double wall_s = 0, tokens_per_s = 0, mfu = 0;
  // tokens / row_tokens, and the rest: the share of padding
  double packing_efficiency() const { return row_tokens > 0 ? double(tokens) / double(row_tokens) : 1.0; }
  double loss = NAN, val_loss = NAN;  // the last step's loss, the last evaluation's
  std::optional<double> aux_loss, expert_load;  // the last step's (models with experts, as StepRecord's)
  // Preference training: the last step's metrics, the last evaluation's.
  std::optional<PreferenceMetrics> preference, val_preference;
  std::vector<RankPeakMemory> memory_peak;
  CommStats comm;  // rank 0's collectives over the training steps
  double comm_in_flight_s = 0;  // reduce-scatters and all-gathers running (what can overlap compute)
  double comm_waited_s = 0;     // compute blocked waiting for them
};

// What every rank holds once the engine is set up, gathered to every rank in rank order: model
// states in device memory per category, transient buffers, and what lives in host memory or files
// ("offload"). A collective.
std::vector<RankMemory> gather_setup_memory(Communicator& comm);

// " | nll_loss ..., log_odds_ratio ..., log_odds_chosen ..." of ORPO's metrics for the console, or "".
std::string odds_ratio_text(const PreferenceMetrics& m);

}  // namespace zt
