#pragma once
// Preference training (docs/config.md, "preference"; docs/architecture.md, "Preference training"):
// the objective of pairs of a chosen and a rejected completion as TRL's DPOTrainer computes it, and
// the reference log-probabilities it compares against.
//
// A micro-batch of B pairs is 2B rows (data/sample_sampler.hpp): rows 2j and 2j + 1 the chosen and
// the rejected sequence of pair j, in one forward. A completion's log-probability is the SUM of its
// tokens' log-probabilities (the targets the mask counts; the model's per-target losses negated).
// Each pair's loss depends on that pair alone, so a step's loss, the mean over its pairs on all
// ranks and micro-batches, is reached by weighting each pair's gradient by 1 / (the step's pairs):
// the backward of each row is that of its sequence's log-probability times d loss / d logp. The
// NLL term (rpo_alpha's, ORPO's) is the mean over the step's chosen targets on all ranks, each
// target weighted 1 / (their number) beside its completion's weight.
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "config/config.hpp"
#include "data/data_sampler.hpp"
#include "data/sample_sampler.hpp"
#include "metrics/records.hpp"
#include "model/gpt.hpp"

namespace zt {

// Log-probabilities of a pair's two completions, and their numbers of tokens; of the chosen row's
// every target that counts (the NLL term's: its completion's, with ORPO its prompt's too).
struct PairLogps {
  double chosen = 0, rejected = 0;
  int64_t chosen_tokens = 0, rejected_tokens = 0;
  double chosen_sequence = 0;
  int64_t chosen_sequence_tokens = 0;
};

// A pair's loss and its derivatives by the policy's log-probabilities.
struct PairLoss {
  double loss = 0, dchosen = 0, drejected = 0;
};

// loss_type sigmoid: -log σ(β D), D = (logp_c - ref_c) - (logp_r - ref_r); robust: with label
// smoothing ε, (-(1 - ε) log σ(β D) + ε log σ(-β D)) / (1 - 2ε); ipo: (D' - 1/(2β))², D' with each
// log-ratio divided by its completion's tokens; simpo (no reference): -log σ(β (m_c - m_r) - γ), m a
// completion's mean log-probability; orpo (no reference): -β log σ(o_c - o_r), o = m - log(1 - e^m)
// the log-odds of m. The NLL term (rpo_alpha's sft, ORPO's) is not a pair's: PreferenceObjective.
PairLoss pair_loss(const config::PreferenceConfig& config, const PairLogps& policy, const PairLogps& reference);

// ORPO's log-odds ratio o_c - o_r of a pair (pair_loss).
double orpo_log_odds(const PairLogps& policy);

// The pairs of a forward of 2·pairs rows of T targets: each row's sum of -loss over the targets
// that count (losses: the model's per-target losses, NaN where none counts), the completion's from
// target prompt_targets[j] of pair j's chosen row on (the prompt's tokens but its first: those that
// count only when the chosen prompt counts, ORPO's), every one into chosen_sequence.
std::vector<PairLogps> pair_logps(const float* losses, const int32_t* targets, const std::vector<int>& prompt_targets,
                                  int T);

// Where a pass over pairs reads its micro-batches into, and what it calls before each forward.
struct PairBuffers {
  int32_t* inputs;
  int32_t* targets;
  RowSegments* segments;
  std::function<void()> begin_micro_batch;
};

// Forwards of `batches` micro-batches of pairs in evaluation rounds (rank r takes micro-batches r,
// r + W, ...: every rank runs as many forwards, so stage 3's gathers stay in step); `visit` gets the
// pairs of each micro-batch this rank holds and their log-probabilities (pair_logps, the prompts'
// targets from the sampler).
void forward_pairs(Gpt& model, ParamHooks& hooks, const SampleSampler& sampler, int64_t batches,
                   const PairBuffers& buffers,
                   const std::function<void(const std::vector<int64_t>&, const std::vector<PairLogps>&)>& visit);

// What a step's (or an evaluation's) pairs sum to, in the order all_reduce_sum adds them.
// Without a reference (simpo, orpo) the rewards and logps are those of the mean log-probabilities,
// as TRL's CPOTrainer and ORPOTrainer log them; orpo adds ORPOTrainer's nll_loss, log_odds_ratio
// (the mean of log σ(o_c - o_r)) and log_odds_chosen (the mean of o_c - o_r).
struct PreferenceSums {
  enum : size_t {
    Pairs,
    Loss,
    RewardsChosen,
    RewardsRejected,
    Accuracies,
    Margins,
    LogpsChosen,
    LogpsRejected,
    ChosenNll,     // -Σ logp of the chosen rows' targets that count (PairLogps::chosen_sequence)
    ChosenTokens,  // their number
    LogOddsRatio,
    LogOddsChosen,
    Count
  };
  std::array<double, Count> v{};
  void add(const config::PreferenceConfig& config, const PairLogps& policy, const PairLogps& reference, double loss);
  // The loss: the mean of the pairs' losses, plus nll_weight() (rpo_alpha, or ORPO's 1) times the
  // chosen rows' mean NLL over all their counted tokens (TRL's "sft" loss and ORPO's nll_loss, a mean
  // over the batch's tokens, not of the pairs' means).
  double loss(const config::PreferenceConfig& config) const;
  // Means over the pairs (NaN without any), in the record's fields; orpo's odds-ratio ones with it.
  PreferenceMetrics means(const config::PreferenceConfig& config) const;
};

// The reference log-probabilities of every pair of a data set (by the pair's number in the file; NaN
// for a pair left out), computed by one forward pass of the initial weights before training, kept
// beside the checkpoints (reference_logps.json in training.checkpoint_dir) so that a resumed run, at
// any world size, reads them instead; refused when the data changed since.
class PreferenceReference {
public:
  PreferenceReference() = default;
  const PairLogps& of(int64_t pair) const { return logps_[size_t(pair)]; }
  size_t pairs() const { return logps_.size(); }

  // The forward pass over all pairs (forward_pairs; collective: every rank ends with the whole table).
  static PreferenceReference compute(Gpt& model, ParamHooks& hooks, Communicator& comm, const SampleSampler& sampler,
                                     const TokenDataset& data, const PairBuffers& buffers);
  // Written by rank 0 to `path`, with what identifies the data (its files and a digest of their
  // tokens, mask and index) and the reference that made them (`source`: reference_source).
  void save(const std::string& path, const TokenDataset& data, const std::string& source) const;
  // Throws zt::BadInput naming the file when it is missing, malformed, made from other data, or by
  // another reference than `source` (a file that records none is taken as it is).
  static PreferenceReference load(const std::string& path, const TokenDataset& data, const std::string& source);

private:
  std::vector<PairLogps> logps_;
};

// The objective over a run's steps: each micro-batch's pairs give their losses and metrics, and the
// weights of its rows for backward.
class PreferenceObjective {
public:
  // pairs_per_micro_batch: the engine averages the gradients of a step's `micro_batches` (ranks ×
  // accumulation), so a micro-batch's share of the mean over the step's pairs is its own mean.
  // `reference` is not read when the loss has none (config.has_reference()).
  PreferenceObjective(const config::PreferenceConfig& config, PreferenceReference reference,
                      int64_t pairs_per_micro_batch, int64_t micro_batches)
      : config_(config),
        reference_(std::move(reference)),
        pairs_per_micro_batch_(pairs_per_micro_batch),
        micro_batches_(micro_batches) {}
  // chosen_tokens: the step's chosen rows' targets that count on all ranks (StepTokens::chosen),
  // the divisor of the NLL term's mean.
  void begin_step(int64_t chosen_tokens) {
    sums_ = {};
    chosen_tokens_ = chosen_tokens;
  }
  // After the forward of a micro-batch of pairs `pairs` (rows 2j, 2j + 1: pair j; the prompt's
  // targets of each, pair_logps): adds their losses and metrics to the step's, and returns the
  // weights of its targets (host memory, [B, T], until the next call): d (step loss) / d (the
  // target's loss), times the engine's micro-batches.
  const float* micro_batch(Gpt& model, const int32_t* targets, const BatchShape& shape,
                           const std::vector<int64_t>& pairs, const std::vector<int>& prompt_targets);
  // The step's sums on this rank (all_reduce_sum them for the step's).
  PreferenceSums& sums() { return sums_; }
  // The evaluation of `batches` micro-batches of the validation pairs against their reference
  // (forward_pairs): this rank's sums.
  PreferenceSums evaluate(Gpt& model, ParamHooks& hooks, const SampleSampler& sampler, int64_t batches,
                          const PreferenceReference& reference, const PairBuffers& buffers) const;

private:
  // The reference log-probabilities of `pair` (zeros without a reference).
  static PairLogps reference_of(const config::PreferenceConfig& config, const PreferenceReference& reference,
                                int64_t pair);

  config::PreferenceConfig config_;
  PreferenceReference reference_;
  int64_t pairs_per_micro_batch_, micro_batches_;
  int64_t chosen_tokens_ = 0;
  PreferenceSums sums_;
  std::vector<float> losses_, weights_;
};

// What made a run's reference log-probabilities, as their file records it: precompute, adapters_off,
// or the reference model's directory as an absolute path.
std::string reference_source(const config::PreferenceConfig& config);

// The shape of the model a run trains: with DPO's losses (TRL's DPOTrainer) the load-balancing loss
// of a model with experts is on whenever its coefficient is not 0, output_router_logits or not, as
// DPOTrainer asks the forward for it (the model's own config, and so the saved config.json, keep
// theirs); simpo and orpo (CPOTrainer, ORPOTrainer) and training without preferences follow
// output_router_logits.
GptShape trained_model_shape(const config::Config& config);
// How the log line of the reference pass says what it ran: "", " with the adapters off", " of the
// reference model DIR".
std::string reference_pass_words(const config::PreferenceConfig& config);

// The file of the reference beside the checkpoints of `checkpoint_dir` (of the validation pairs: val).
std::string reference_logps_path(const std::string& checkpoint_dir, bool val = false);

}  // namespace zt
