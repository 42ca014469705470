#include "config/provenance.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "optim/trainer_schedules.hpp"

namespace zt::config {

double peak_lr(const Config& c) {
  const auto& sc = c.scheduler;
  if (sc.type == "WarmupLR" || sc.type == "WarmupDecayLR" || is_trainer_schedule(sc.type)) return sc.warmup_max_lr;
  if (sc.type == "OneCycle") return sc.cycle_max_lr;
  if (sc.type == "LRRangeTest") return sc.lr_range_test_min_lr;
  return c.optimizer.lr;
}

LrKey decisive_lr_key(const Config& c, const ValueSources& s) {
  const auto& sc = c.scheduler;
  if ((sc.type == "WarmupLR" || sc.type == "WarmupDecayLR") && s.given("scheduler.params.warmup_max_lr"))
    return {"scheduler.params.warmup_max_lr", true};
  if (sc.type == "OneCycle") return {"scheduler.params.cycle_max_lr", false};
  if (sc.type == "LRRangeTest") return {"scheduler.params.lr_range_test_min_lr", false};
  return {"optimizer.params.lr", true};
}

namespace {

std::string explain_lr(const Config& c, const ValueSources& s) {
  const LrKey d = decisive_lr_key(c, s);
  std::string from;
  if (d.key != "optimizer.params.lr" || s.given(d.key))
    from = s.chain(d.key, s.described("training.lr"));
  else if (!s.given("optimizer"))
    from = s.described("training.lr") + ", no optimizer block";
  else
    from = s.described("training.lr") + ", optimizer.params.lr not given";
  return fmt::format("lr {:g} from {}", peak_lr(c), from);
}

std::string explain_warmup(const ValueSources& s) {
  if (s.given("training.warmup_ratio") && !s.given("training.warmup_steps"))
    return s.described("training.warmup_ratio");
  return s.described("training.warmup_steps");
}

std::string explain_schedule(const Config& c, const ValueSources& s) {
  const auto& sc = c.scheduler;
  const std::string type_how = s.how("training.lr_scheduler_type");
  if (sc.type.empty())
    return fmt::format("schedule constant: no scheduler block, training.lr_scheduler_type ({})", type_how);
  if (is_trainer_schedule(sc.type))
    return fmt::format("schedule {}, the Hugging Face Trainer's (no scheduler block, training.lr_scheduler_type {}): "
                       "warmup {} steps from {}, then {}",
                       sc.type, type_how, sc.warmup_num_steps, explain_warmup(s), describe_trainer_decay(sc));
  std::string text = fmt::format("schedule {} from scheduler ({})", sc.type, s.how("scheduler"));
  if (sc.type == "WarmupLR" || sc.type == "WarmupDecayLR" || sc.type == "WarmupCosineLR")
    text += fmt::format(", {} warmup {} steps from {}", sc.warmup_type, sc.warmup_num_steps,
                        s.chain("scheduler.params.warmup_num_steps", explain_warmup(s)));
  if (sc.type == "WarmupDecayLR" || sc.type == "WarmupCosineLR")
    text += fmt::format(", decay to step {} from {}", sc.total_num_steps,
                        s.chain("scheduler.params.total_num_steps", s.described("training.steps")));
  return text;
}

// A key of the batch: given ("auto" included), or derived from the others as DeepSpeed does.
std::string batch_key(const ValueSources& s, const std::string& key, const std::string& shorthand) {
  if (s.given(key)) return s.chain(key, s.described(shorthand));
  if (s.given("train_batch_size"))
    return fmt::format("{} derived from train_batch_size ({})", key, s.how("train_batch_size"));
  return key + " not given (1, as DeepSpeed takes it)";
}

std::string explain_batch(const Config& c, const ValueSources& s) {
  return fmt::format("batch {} = {} x {} x {} rank{} from {}, {}", c.train_batch_size, c.train_micro_batch_size_per_gpu,
                     c.gradient_accumulation_steps, c.world_size, c.world_size == 1 ? "" : "s",
                     batch_key(s, "train_micro_batch_size_per_gpu", "training.micro_batch_size"),
                     batch_key(s, "gradient_accumulation_steps", "training.gradient_accumulation_steps"));
}

std::string explain_precision(const Config& c, const ValueSources& s) {
  const std::string fp16_key = "fp16.enabled";
  const std::string bf16_key = std::string(!s.given("bf16") && s.given("bfloat16") ? "bfloat16" : "bf16") + ".enabled";
  std::string from;
  for (const std::string& key : {fp16_key, bf16_key})
    if (s.given(key))
      from += fmt::format("{}{} {} ({})", from.empty() ? "" : ", ", key, s.find(key)->dump(), s.how(key));
  if (from.empty()) return fmt::format("precision {}, the default (neither fp16 nor bf16 enabled)", c.dtype());
  if (s.is_auto(bf16_key) && !c.fp16.enabled)
    from += c.bf16.enabled ? "; bf16 \"auto\": the device has bf16" : "; bf16 \"auto\": the device has no bf16";
  if (s.is_auto(fp16_key))
    from += "; fp16 \"auto\": off unless set to true, as with the Hugging Face Trainer without --fp16";
  return fmt::format("precision {} from {}", c.dtype(), from);
}

// DeepSpeed's steps_per_print (2000 in the Trainer's example configs) is not the log's interval.
std::string explain_logging(const Config& c, const ValueSources& s) {
  if (!s.given("steps_per_print") || c.steps_per_print == c.training.logging_steps) return "";
  return fmt::format("a step line every {} steps from {}; steps_per_print {} ({}) is DeepSpeed's own print interval "
                     "and decides nothing here",
                     c.training.logging_steps, s.described("training.logging_steps"), c.steps_per_print,
                     s.how("steps_per_print"));
}

}  // namespace

Provenance explain_provenance(const Config& c, const ValueSources& s) {
  Provenance p;
  p.lr = explain_lr(c, s);
  p.schedule = explain_schedule(c, s);
  p.batch = explain_batch(c, s);
  p.precision = explain_precision(c, s);
  p.logging = explain_logging(c, s);
  return p;
}

void log_provenance(const Config& c) {
  for (const std::string* line :
       {&c.provenance.weights, &c.provenance.length, &c.provenance.lr, &c.provenance.schedule, &c.provenance.batch,
        &c.provenance.precision, &c.provenance.logging})
    if (!line->empty()) spdlog::info("{}", *line);
}

}  // namespace zt::config
