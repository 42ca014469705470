#include "train/start_summary.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "config/provenance.hpp"

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
  return s.type;
}

}  // namespace

void log_data_and_optimizer(const config::Config& c, const TokenDataset& train, const TokenDataset* val) {
  const double tokens_per_step = double(c.train_batch_size) * double(c.data.seq_len);
  const double epochs = double(c.training.steps) * tokens_per_step / double(std::max<int64_t>(1, train.size()));
  spdlog::info("data: {} ({}, {} tokens{}: {:.3g} epochs in {} steps of {:.0f} tokens){}; sequence {}{}", train.path(),
               token_format_name(train.format()), train.size(),
               train.has_loss_mask() ? ", the loss on the targets its mask keeps" : "", epochs, c.training.steps,
               tokens_per_step,
               val ? fmt::format(", val {}", val->path()) : ", no validation data", c.data.seq_len,
               c.data.shuffle ? ", shuffled" : "");
  const auto& o = c.optimizer;
  const std::string clipping = c.gradient_clipping > 0 ? fmt::format("{:g}", c.gradient_clipping) : "off";
  spdlog::info("optimizer: {} lr {:g}, betas {:g}/{:g}, weight decay {:g}, clipping {}; lr schedule {}", o.type, o.lr,
               o.beta1, o.beta2, o.weight_decay, clipping, schedule(c));
  config::log_provenance(c);
}

}  // namespace zt
