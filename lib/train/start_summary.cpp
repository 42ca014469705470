#include "train/start_summary.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "config/provenance.hpp"
#include "data/data_files.hpp"
#include "optim/trainer_schedules.hpp"

namespace zt {

namespace {

std::string schedule(const config::Config& c) {
  const auto& s = c.scheduler;
  if (s.type.empty()) return "constant (no scheduler block)";
  if (s.type == "WarmupLR" || s.type == "WarmupDecayLR" || s.type == "WarmupCosineLR") {
    std::string text = fmt::format("{}, {} warmup over {} steps", s.type, s.warmup_type, s.warmup_num_steps);
    if (s.type != "WarmupLR") text += fmt::format(", decay to step {}", s.total_num_steps);
    return text;
  }
  if (is_trainer_schedule(s.type))
    return fmt::format("{}, linear warmup over {} steps, then {}", s.type, s.warmup_num_steps,
                       describe_trainer_decay(s));
  return s.type;
}

// The data line: windows (tokens per step), or the samples of record data and their rows.
void log_data(const config::Config& c, const TokenDataset& train, const DataSampler& sampler,
              const TokenDataset* val) {
  const std::string mask = train.has_loss_mask() ? ", the loss on the targets its mask keeps" : "";
  const std::string rest =
      fmt::format("{}; sequence {}{}", val ? fmt::format(", val {}", val->path()) : ", no validation data",
                  c.data.seq_len, c.data.shuffle ? ", shuffled" : "");
  if (sampler.has_samples()) {
    const double epochs =
        double(c.training.steps) * double(sampler.units_per_step()) / double(sampler.epoch_units());
    spdlog::info("data: {} ({}, {} tokens{}: {}; {:.3g} epochs in {} steps of {} rows){}", train.path(),
                 kTokenFormatNames.name(train.format()), train.size(), mask, sampler.describe(), epochs,
                 c.training.steps, sampler.units_per_step(), rest);
    return;
  }
  const double tokens_per_step = double(c.train_batch_size) * double(c.data.seq_len);
  const double epochs = double(c.training.steps) * tokens_per_step / double(std::max<int64_t>(1, train.size()));
  spdlog::info("data: {} ({}, {} tokens{}: {:.3g} epochs in {} steps of {:.0f} tokens){}", train.path(),
               kTokenFormatNames.name(train.format()), train.size(), mask, epochs, c.training.steps, tokens_per_step,
               rest);
}

void log_data_and_optimizer(const config::Config& c, const TokenDataset& train, const DataSampler& sampler,
                            const TokenDataset* val) {
  log_data(c, train, sampler, val);
  const auto& d = c.data;
  if (val && d.train.size() == 1 && d.val == std::vector<std::string>{val_file_of(d.train[0])})
    spdlog::info("data.val: {}, the validation file beside data.train (zerotrain tokenize --val writes it; "
                 "--set data.val= evaluates nothing)",
                 d.val[0]);
  const auto& o = c.optimizer;
  const std::string clipping = c.gradient_clipping > 0 ? fmt::format("{:g}", c.gradient_clipping) : "off";
  spdlog::info("optimizer: {} lr {:g}, betas {:g}/{:g}, weight decay {:g}, clipping {}; lr schedule {}", o.type, o.lr,
               o.beta1, o.beta2, o.weight_decay, clipping, schedule(c));
  config::log_provenance(c);
}

}  // namespace

void log_run_start(const config::Config& c, const SetupRecord& setup, const Gpt& model, const PeakFlops& peak,
                   const MemoryPlan& plan, const TokenDataset& train, const DataSampler& sampler,
                   const TokenDataset* val) {
  const int W = setup.world_size;
  spdlog::info("model: {}, seq {} = {} parameters", describe(model.shape()), c.data.seq_len, model.num_params());
  spdlog::info("ZeRO stage {} on {} rank{}, {} (communication {}), batch {} = micro {} x accumulation {} x world {}",
               c.zero.stage, W, W == 1 ? "" : "s", c.dtype(), c.communication_data_type, c.train_batch_size,
               c.train_micro_batch_size_per_gpu, c.gradient_accumulation_steps, W);
  log_data_and_optimizer(c, train, sampler, val);
  const Gpt::PairFlops pair = model.flops_per_pair();
  // attention as computed: each sample's own keys, not the whole row's; in sliding layers, the window's
  const std::string sliding =
      pair.sliding == 0 ? std::string()
                        : fmt::format(" + {} FLOP x the sum of sample length x min(length, {})", pair.sliding,
                                      model.shape().sliding_window);
  const size_t head = model.head_flops_per_row();
  if (sampler.has_samples())
    spdlog::info("MFU = ({} FLOP/token x tokens + {} FLOP x the targets that count (the LM head's rows) + {} FLOP x "
                 "the sum of squared sample lengths{}) / s / (ranks x peak); peak per rank {:.1f} GFLOP/s = {}",
                 model.flops_per_token(0) - head, head, pair.full, sliding, peak.flops / 1e9, peak.explanation);
  else
    spdlog::info("MFU = {} FLOP/token x tokens/s / (ranks x peak); peak per rank {:.1f} GFLOP/s = {}",
                 model.flops_per_token(), peak.flops / 1e9, peak.explanation);
  // Measured model-state bytes per rank beside what the ZeRO formula predicts for this config.
  auto mib = [](uint64_t b) { return double(b) / 1048576.0; };
  for (auto& r : setup.memory)
    spdlog::info("memory rank {}: params {:.3f} grads {:.3f} optimizer {:.3f} offload {:.3f} MiB (formula {}: "
                 "{:.3f} {:.3f} {:.3f} {:.3f}); buffers {:.3f} MiB",
                 r.rank, mib(r.params), mib(r.grads), mib(r.optimizer), mib(r.offload), plan.formula,
                 mib(plan.params), mib(plan.grads), mib(plan.optimizer), mib(plan.offload), mib(r.buffers));
  if (c.training.eval_interval > 0 && !val)
    spdlog::info("no validation data (data.val is empty): training.eval_interval {} has nothing to evaluate",
                 c.training.eval_interval);
  const config::TrainingConfig& t = c.training;
  if (t.tracks_best())
    spdlog::info(
        "best model: by {} ({} is better){}{}{}{}", t.metric_for_best_model, t.greater_is_better ? "greater" : "lower",
        t.save_strategy == config::SaveStrategy::Best ? "; a checkpoint at each new best (training.save_strategy best)"
                                                      : "",
        t.keep_last > 0 ? fmt::format("; training.keep_last {} never removes the best", t.keep_last) : "",
        t.load_best_model_at_end ? "; the final model is the best checkpoint's (load_best_model_at_end)" : "",
        t.early_stopping_patience > 0
            ? fmt::format("; early stopping after {} evaluations without an improvement > {:g}",
                          t.early_stopping_patience, t.early_stopping_threshold)
            : "");
}

}  // namespace zt
