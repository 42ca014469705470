#include "config/unused_shorthands.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "config/provenance.hpp"
#include "optim/trainer_schedules.hpp"

namespace zt::config {

namespace {

// What decides the value a shorthand stands for: the DeepSpeed key, its value, and how it was given.
struct Decider {
  std::string key;
  std::string value;
  std::string how;
  bool takes_auto;  // "auto" there would take the shorthand
};

void reject_unused(const Diagnostics& diag, const std::string& shorthand, const std::string& value, const Decider& d) {
  const std::string fix = d.takes_auto ? fmt::format("set {} to \"auto\" to use {}, or leave {} out", d.key, shorthand,
                                                     shorthand)
                                       : fmt::format("leave {} out, or change {}", shorthand, d.key);
  diag.reject(shorthand, fmt::format("{} is not used: {} is {} ({}) (expected only one of them: {})", value, d.key,
                                     d.value, d.how, fix));
}

void check_lr(const Config& c, const ValueSources& s, const Diagnostics& diag) {
  if (!s.given("training.lr")) return;
  const LrKey d = decisive_lr_key(c, s);
  if (peak_lr(c) != c.training.lr)
    reject_unused(diag, "training.lr", fmt::format("{:g}", c.training.lr),
                  {d.key, fmt::format("{:g}", peak_lr(c)), s.how(d.key), d.takes_auto});
}

void check_warmup(const Config& c, const ValueSources& s, const Diagnostics& diag) {
  // A warmup_ratio of 0 asks for nothing (warmup_steps then counts), as in the Trainer.
  const bool steps_given = s.given("training.warmup_steps");
  if (!steps_given && !(s.given("training.warmup_ratio") && c.training.warmup_ratio > 0)) return;
  const std::string shorthand = steps_given ? "training.warmup_steps" : "training.warmup_ratio";
  const bool steps_as_ratio = c.training.warmup_steps == 0 && c.training.warmup_ratio > 0;  // warmup_steps 0.1
  const std::string value = shorthand == "training.warmup_steps" && !steps_as_ratio
                                ? std::to_string(c.training.warmup_steps)
                                : fmt::format("{:g}", c.training.warmup_ratio);
  const int64_t wanted = c.training.warmup_step_count();
  const auto& sc = c.scheduler;
  if (is_trainer_schedule(sc.type)) return;  // the schedule of no scheduler block takes it
  if (sc.type.empty()) {
    if (wanted > 0)
      reject_unused(diag, shorthand, value, {"training.lr_scheduler_type", "constant",
                                             s.how("training.lr_scheduler_type") + "; no scheduler block", false});
    return;
  }
  if (sc.type == "OneCycle" || sc.type == "LRRangeTest") {
    if (wanted > 0)
      reject_unused(diag, shorthand, value, {"scheduler.type", sc.type, s.how("scheduler") + ", no warmup", false});
    return;
  }
  // DeepSpeed's warmups last at least 2 steps; "auto" gives max(2, the shorthand's count).
  if (sc.warmup_num_steps != std::max<int64_t>(2, wanted))
    reject_unused(diag, shorthand, value, {"scheduler.params.warmup_num_steps", std::to_string(sc.warmup_num_steps),
                                           s.how("scheduler.params.warmup_num_steps"), true});
}

// training.adam_beta1, adam_beta2, adam_epsilon and weight_decay against the optimizer block's own.
void check_adam(const Config& c, const ValueSources& s, const Diagnostics& diag) {
  const auto& t = c.training;
  const auto& o = c.optimizer;
  auto check = [&](const char* shorthand, double wanted, const char* key, double used) {
    if (s.given(shorthand) && wanted != used)
      reject_unused(diag, shorthand, fmt::format("{:g}", wanted), {key, fmt::format("{:g}", used), s.how(key), true});
  };
  check("training.adam_beta1", t.adam_beta1, "optimizer.params.betas", o.beta1);
  check("training.adam_beta2", t.adam_beta2, "optimizer.params.betas", o.beta2);
  check("training.adam_epsilon", t.adam_epsilon, "optimizer.params.eps", o.eps);
  check("training.weight_decay", t.weight_decay, "optimizer.params.weight_decay", o.weight_decay);
}

// How a key of the batch got its value: given, or derived from the others as DeepSpeed does.
std::string batch_how(const ValueSources& s, const std::string& key) {
  if (s.given(key)) return s.how(key);
  if (s.given("train_batch_size")) return "derived from train_batch_size, " + s.how("train_batch_size");
  return "not given: 1, as DeepSpeed takes it";
}

}  // namespace

void check_unused_shorthands(const Config& c, const ValueSources& s, const Diagnostics& diag) {
  const auto& t = c.training;
  check_lr(c, s, diag);
  check_adam(c, s, diag);
  check_warmup(c, s, diag);
  if (s.given("training.max_grad_norm") && c.gradient_clipping != t.max_grad_norm)
    reject_unused(diag, "training.max_grad_norm", fmt::format("{:g}", t.max_grad_norm),
                  {"gradient_clipping", fmt::format("{:g}", c.gradient_clipping), s.how("gradient_clipping"), true});
  if (s.given("training.micro_batch_size") && c.train_micro_batch_size_per_gpu != t.micro_batch_size)
    reject_unused(diag, "training.micro_batch_size", std::to_string(t.micro_batch_size),
                  {"train_micro_batch_size_per_gpu", std::to_string(c.train_micro_batch_size_per_gpu),
                   batch_how(s, "train_micro_batch_size_per_gpu"), true});
  if (s.given("training.gradient_accumulation_steps") && c.gradient_accumulation_steps != t.gradient_accumulation_steps)
    reject_unused(diag, "training.gradient_accumulation_steps", std::to_string(t.gradient_accumulation_steps),
                  {"gradient_accumulation_steps", std::to_string(c.gradient_accumulation_steps),
                   batch_how(s, "gradient_accumulation_steps"), true});
  if (s.given("training.lr_scheduler_type") && s.given("scheduler"))
    reject_unused(diag, "training.lr_scheduler_type", t.lr_scheduler_type,
                  {"scheduler.type", c.scheduler.type, s.how("scheduler"), false});
  if (!t.lr_scheduler_kwargs.empty() && s.given("scheduler"))
    reject_unused(diag, "training.lr_scheduler_kwargs", t.lr_scheduler_kwargs.dump(),
                  {"scheduler.type", c.scheduler.type, s.how("scheduler"), false});
}

void settle_shorthands(Config& c) {
  auto& t = c.training;
  const auto& sc = c.scheduler;
  t.lr = peak_lr(c);
  t.adam_beta1 = c.optimizer.beta1;
  t.adam_beta2 = c.optimizer.beta2;
  t.adam_epsilon = c.optimizer.eps;
  t.weight_decay = c.optimizer.weight_decay;
  t.max_grad_norm = c.gradient_clipping;
  t.micro_batch_size = c.train_micro_batch_size_per_gpu;
  t.gradient_accumulation_steps = c.gradient_accumulation_steps;
  const bool warms_up = is_trainer_schedule(sc.type) || sc.type == "WarmupLR" || sc.type == "WarmupDecayLR" ||
                        sc.type == "WarmupCosineLR";
  t.warmup_steps = warms_up ? sc.warmup_num_steps : 0;
  t.warmup_ratio = 0.0;
  if (!is_trainer_schedule(sc.type) && !sc.type.empty()) {  // the scheduler block decides
    t.lr_scheduler_type.clear();
    t.lr_scheduler_kwargs = nlohmann::json::object();
  }
}

}  // namespace zt::config
