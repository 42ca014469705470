#include "train/preference.hpp"

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "comm/control_channel.hpp"
#include "core/checked_file.hpp"
#include "core/error.hpp"
#include "core/ignored_target.hpp"
#include "core/json_file.hpp"
#include "core/sha256.hpp"

namespace zt {

namespace {

double log_sigmoid(double x) { return x >= 0 ? -std::log1p(std::exp(-x)) : x - std::log1p(std::exp(x)); }
double sigmoid(double x) { return x >= 0 ? 1 / (1 + std::exp(-x)) : std::exp(x) / (1 + std::exp(x)); }
// log(1 - e^m) for m < 0, branched at -ln 2 as TRL's log1mexp against cancellation.
double log1mexp(double m) { return m < -std::log(2.0) ? std::log1p(-std::exp(m)) : std::log(-std::expm1(m)); }
// A completion's mean log-probability m and its log-odds, log(p / (1 - p)) with p = e^m.
double mean_logp(double logp, int64_t tokens) { return logp / double(std::max<int64_t>(1, tokens)); }
double log_odds(double m) { return m - log1mexp(m); }

// What identifies the data a reference was computed from: a digest of its tokens, loss mask and
// sample offsets.
std::string data_digest(const TokenDataset& data) {
  Sha256 h;
  const auto offsets = data.sample_offsets();
  h.update(offsets.data(), offsets.size_bytes());
  std::vector<int32_t> tokens;
  std::vector<uint8_t> mask;
  constexpr int64_t kPiece = 1 << 20;
  for (int64_t at = 0; at < data.size(); at += kPiece) {
    const int64_t n = std::min(kPiece, data.size() - at);
    tokens.resize(size_t(n));
    mask.resize(size_t(n));
    data.read(at, n, tokens.data());
    data.read_loss_mask(at, n, mask.data());
    h.update(tokens.data(), tokens.size() * sizeof(int32_t));
    h.update(mask.data(), mask.size());
  }
  return h.hex_digest();
}

}  // namespace

double orpo_log_odds(const PairLogps& policy) {
  return log_odds(mean_logp(policy.chosen, policy.chosen_tokens)) -
         log_odds(mean_logp(policy.rejected, policy.rejected_tokens));
}

PairLoss pair_loss(const config::PreferenceConfig& c, const PairLogps& policy, const PairLogps& reference) {
  using config::PreferenceLoss;
  const double beta = c.beta;
  const double nc = double(std::max<int64_t>(1, policy.chosen_tokens));
  const double nr = double(std::max<int64_t>(1, policy.rejected_tokens));
  const double chosen_ratio = policy.chosen - reference.chosen, rejected_ratio = policy.rejected - reference.rejected;
  PairLoss out;
  if (c.loss_type == PreferenceLoss::Orpo) {  // d log-odds / d m = 1 / (1 - e^m)
    const double x = orpo_log_odds(policy), dx = -beta * sigmoid(-x);
    out.loss = -beta * log_sigmoid(x);
    out.dchosen = dx / -std::expm1(mean_logp(policy.chosen, policy.chosen_tokens)) / nc;
    out.drejected = -dx / -std::expm1(mean_logp(policy.rejected, policy.rejected_tokens)) / nr;
    return out;
  }
  if (c.loss_type == PreferenceLoss::Ipo) {
    const double gap = chosen_ratio / nc - rejected_ratio / nr - 1 / (2 * beta);
    out.loss = gap * gap;
    out.dchosen = 2 * gap / nc;
    out.drejected = -2 * gap / nr;
    return out;
  }
  // x = β · (a chosen score - a rejected score) [- γ]; scale_c, scale_r: d score / d logp
  double x = 0, scale_c = 1, scale_r = 1;
  if (c.loss_type == PreferenceLoss::Simpo) {
    scale_c = 1 / nc;
    scale_r = 1 / nr;
    x = beta * (policy.chosen / nc - policy.rejected / nr) - c.simpo_gamma;
  } else {
    x = beta * (chosen_ratio - rejected_ratio);
  }
  double dx = 0;  // d loss / d x
  if (c.loss_type == PreferenceLoss::Robust) {
    const double e = c.label_smoothing;
    out.loss = (-(1 - e) * log_sigmoid(x) + e * log_sigmoid(-x)) / (1 - 2 * e);
    dx = (-(1 - e) * sigmoid(-x) - e * sigmoid(x)) / (1 - 2 * e);
  } else {  // sigmoid, simpo
    out.loss = -log_sigmoid(x);
    dx = -sigmoid(-x);
  }
  out.dchosen = beta * dx * scale_c;
  out.drejected = -beta * dx * scale_r;
  return out;
}

std::vector<PairLogps> pair_logps(const float* losses, const int32_t* targets, const std::vector<int>& prompt_targets,
                                  int T) {
  std::vector<PairLogps> out(prompt_targets.size());
  for (size_t j = 0; j < out.size(); ++j) {
    PairLogps& p = out[j];
    for (int k = 0; k < 2; ++k) {
      const size_t row = (2 * j + size_t(k)) * size_t(T);
      double sum = 0, sequence = 0;
      int64_t n = 0, sequence_n = 0;
      for (int t = 0; t < T; ++t)
        if (targets[row + size_t(t)] != kIgnoredTarget) {
          const double logp = -double(losses[row + size_t(t)]);
          sequence += logp;
          ++sequence_n;
          if (t >= prompt_targets[j]) {
            sum += logp;
            ++n;
          }
        }
      (k == 0 ? p.chosen : p.rejected) = sum;
      (k == 0 ? p.chosen_tokens : p.rejected_tokens) = n;
      if (k == 0) {
        p.chosen_sequence = sequence;
        p.chosen_sequence_tokens = sequence_n;
      }
    }
  }
  return out;
}

void PreferenceSums::add(const config::PreferenceConfig& c, const PairLogps& policy, const PairLogps& reference,
                         double loss) {
  double logp_c = policy.chosen, logp_r = policy.rejected;
  if (!c.has_reference()) {
    logp_c = mean_logp(logp_c, policy.chosen_tokens);
    logp_r = mean_logp(logp_r, policy.rejected_tokens);
  }
  const double chosen = c.beta * (logp_c - reference.chosen);
  const double rejected = c.beta * (logp_r - reference.rejected);
  v[Pairs] += 1;
  v[Loss] += loss;
  v[RewardsChosen] += chosen;
  v[RewardsRejected] += rejected;
  v[Accuracies] += chosen > rejected ? 1.0 : 0.0;
  v[Margins] += chosen - rejected;
  v[LogpsChosen] += logp_c;
  v[LogpsRejected] += logp_r;
  v[ChosenNll] -= policy.chosen_sequence;
  v[ChosenTokens] += double(policy.chosen_sequence_tokens);
  if (c.loss_type == config::PreferenceLoss::Orpo) {
    const double x = orpo_log_odds(policy);
    v[LogOddsRatio] += log_sigmoid(x);
    v[LogOddsChosen] += x;
  }
}

double PreferenceSums::loss(const config::PreferenceConfig& c) const {
  const double pairs = v[Loss] / v[Pairs];
  return c.nll_weight() > 0 ? pairs + c.nll_weight() * v[ChosenNll] / v[ChosenTokens] : pairs;
}

PreferenceMetrics PreferenceSums::means(const config::PreferenceConfig& c) const {
  const double n = v[Pairs] > 0 ? v[Pairs] : NAN;
  PreferenceMetrics m{v[RewardsChosen] / n, v[RewardsRejected] / n, v[Accuracies] / n, v[Margins] / n,
                      v[LogpsChosen] / n,   v[LogpsRejected] / n,   std::nullopt};
  if (c.loss_type == config::PreferenceLoss::Orpo)
    m.odds_ratio = OddsRatioMetrics{v[ChosenNll] / v[ChosenTokens], v[LogOddsRatio] / n, v[LogOddsChosen] / n};
  return m;
}

void forward_pairs(Gpt& model, ParamHooks& hooks, const SampleSampler& sampler, int64_t batches,
                   const PairBuffers& b,
                   const std::function<void(const std::vector<int64_t>&, const std::vector<PairLogps>&)>& visit) {
  std::vector<float> losses;
  for (int64_t round = 0; round < sampler.eval_rounds(batches); ++round) {
    const BatchShape shape = sampler.fill_eval_batch(round, batches, b.inputs, b.targets, b.segments);
    b.begin_micro_batch();
    model.forward(b.inputs, b.targets, shape.batch, shape.seq, hooks, b.segments);
    const std::vector<int64_t> ids = sampler.eval_batch_pairs(round, batches);
    if (ids.empty()) continue;
    losses.resize(size_t(shape.tokens()));
    model.copy_losses(losses.data());
    visit(ids, pair_logps(losses.data(), b.targets, sampler.prompt_targets(ids), shape.seq));
  }
}

PreferenceReference PreferenceReference::compute(Gpt& model, ParamHooks& hooks, Communicator& comm,
                                                 const SampleSampler& sampler, const TokenDataset& data,
                                                 const PairBuffers& buffers) {
  const size_t pairs = size_t(data.samples() / 2);
  std::vector<double> sums(2 * pairs, 0.0), present(pairs, 0.0);
  forward_pairs(model, hooks, sampler, sampler.eval_batches(0), buffers,
                [&](const std::vector<int64_t>& ids, const std::vector<PairLogps>& logps) {
                  for (size_t j = 0; j < ids.size(); ++j) {
                    const size_t i = size_t(ids[j]);
                    sums[2 * i] = logps[j].chosen;
                    sums[2 * i + 1] = logps[j].rejected;
                    present[i] = 1;
                  }
                });
  // Each pair was computed on one rank, zeros elsewhere: the sums are the values.
  comm.control().all_reduce_sum(sums.data(), sums.size());
  comm.control().all_reduce_sum(present.data(), present.size());
  PreferenceReference r;
  r.logps_.resize(pairs);
  for (size_t i = 0; i < pairs; ++i)
    r.logps_[i] = present[i] > 0 ? PairLogps{sums[2 * i], sums[2 * i + 1], 0, 0} : PairLogps{NAN, NAN, 0, 0};
  return r;
}

void PreferenceReference::save(const std::string& path, const TokenDataset& data, const std::string& source) const {
  nlohmann::json logps = nlohmann::json::array();
  for (const PairLogps& p : logps_) logps.push_back({p.chosen, p.rejected});
  nlohmann::json files = nlohmann::json::array();
  for (const DataFile& f : data.files()) files.push_back({{"path", f.path}, {"tokens", f.tokens}});
  const nlohmann::json j = {{"data", files},        {"digest", data_digest(data)}, {"reference", source},
                            {"pairs", logps_.size()}, {"logps", logps}};
  write_file_atomically(path, "preference: the reference log-probabilities",
                        [&](CheckedFile& f) { f.write(j.dump(1) + "\n"); });
}

PreferenceReference PreferenceReference::load(const std::string& path, const TokenDataset& data,
                                              const std::string& source) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw BadInput(fmt::format("{}: missing: a resumed preference run reads the reference log-probabilities its "
                               "first run computed there",
                               path));
  const nlohmann::json j = read_json_file(path);
  if (!j.contains("digest") || !j.contains("logps") || !j.at("logps").is_array())
    throw BadInput(fmt::format("{}: not a file of reference log-probabilities (expected digest and logps)", path));
  if (j.at("digest") != data_digest(data) || j.at("logps").size() != size_t(data.samples() / 2))
    throw BadInput(fmt::format("{}: the reference log-probabilities were computed from other data than {}: the data "
                               "changed since the run started (start afresh, or train on the data it started with)",
                               path, data.path()));
  if (j.contains("reference") && j.at("reference") != source)
    throw BadInput(fmt::format("{}: the reference log-probabilities were computed with preference.reference {}, and "
                               "this run's is {} (resume with the reference it started with, or start afresh)",
                               path, j.at("reference").dump(), nlohmann::json(source).dump()));
  PreferenceReference r;
  for (const auto& p : j.at("logps"))
    r.logps_.push_back({p.at(0).is_number() ? p.at(0).get<double>() : NAN,
                        p.at(1).is_number() ? p.at(1).get<double>() : NAN, 0, 0});
  return r;
}

PairLogps PreferenceObjective::reference_of(const config::PreferenceConfig& c, const PreferenceReference& reference,
                                            int64_t pair) {
  return c.has_reference() ? reference.of(pair) : PairLogps{};
}

const float* PreferenceObjective::micro_batch(Gpt& model, const int32_t* targets, const BatchShape& shape,
                                              const std::vector<int64_t>& pairs,
                                              const std::vector<int>& prompt_targets) {
  if (shape.batch != 2 * int(pairs.size()) || prompt_targets.size() != pairs.size())
    fail("preference training: a micro-batch of {} rows holds {} pairs", shape.batch, pairs.size());
  losses_.resize(size_t(shape.tokens()));
  model.copy_losses(losses_.data());
  const std::vector<PairLogps> logps = pair_logps(losses_.data(), targets, prompt_targets, shape.seq);
  // The NLL term's d loss / d (a chosen target's loss), nll_weight / (the step's chosen targets).
  const double dnll = chosen_tokens_ > 0 ? config_.nll_weight() / double(chosen_tokens_) : 0.0;
  const size_t T = size_t(shape.seq);
  weights_.assign(size_t(shape.tokens()), 0.0f);
  for (size_t j = 0; j < pairs.size(); ++j) {
    const PairLogps ref = reference_of(config_, reference_, pairs[j]);
    const PairLoss l = pair_loss(config_, logps[j], ref);
    sums_.add(config_, logps[j], ref, l.loss);
    // A completion's summed target losses are -logp; the engine's mean over its micro-batches makes
    // a pair's share 1 / (pairs per micro-batch), the NLL term's micro-batches / tokens.
    const float chosen = float(-l.dchosen / double(pairs_per_micro_batch_));
    const float rejected = float(-l.drejected / double(pairs_per_micro_batch_));
    const float nll = float(dnll * double(micro_batches_));
    for (size_t t = 0; t < T; ++t) {
      const bool completion = int(t) >= prompt_targets[j];
      weights_[2 * j * T + t] = (completion ? chosen : 0.0f) + nll;
      weights_[(2 * j + 1) * T + t] = completion ? rejected : 0.0f;
    }
  }
  return weights_.data();
}

PreferenceSums PreferenceObjective::evaluate(Gpt& model, ParamHooks& hooks, const SampleSampler& sampler,
                                             int64_t batches, const PreferenceReference& reference,
                                             const PairBuffers& buffers) const {
  PreferenceSums sums;
  forward_pairs(model, hooks, sampler, batches, buffers,
                [&](const std::vector<int64_t>& ids, const std::vector<PairLogps>& logps) {
                  for (size_t j = 0; j < ids.size(); ++j) {
                    const PairLogps ref = reference_of(config_, reference, ids[j]);
                    sums.add(config_, logps[j], ref, pair_loss(config_, logps[j], ref).loss);
                  }
                });
  return sums;
}

GptShape trained_model_shape(const config::Config& c) {
  GptShape shape = c.model.shape;
  MoeShape& moe = shape.moe;
  if (c.preference.enabled && c.preference.has_reference() && moe.enabled() && moe.router_aux_loss_coef != 0)
    moe.output_router_logits = true;
  return shape;
}

std::string reference_source(const config::PreferenceConfig& c) {
  if (c.reference != config::PreferenceReferenceSource::Model) return c.reference_text();
  return std::filesystem::absolute(c.reference_model).lexically_normal().string();
}

std::string reference_pass_words(const config::PreferenceConfig& c) {
  switch (c.reference) {
    case config::PreferenceReferenceSource::AdaptersOff: return " with the adapters off";
    case config::PreferenceReferenceSource::Model: return " of the reference model " + c.reference_model;
    case config::PreferenceReferenceSource::Precompute: break;
  }
  return "";
}

std::string reference_logps_path(const std::string& checkpoint_dir, bool val) {
  return (std::filesystem::path(checkpoint_dir) / (val ? "reference_logps.val.json" : "reference_logps.json")).string();
}

}  // namespace zt
