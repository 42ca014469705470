#pragma once
// The training block's lr, max_grad_norm, micro_batch_size, gradient_accumulation_steps,
// warmup_steps, warmup_ratio and lr_scheduler_type stand for DeepSpeed keys: "auto" (or leaving the
// key out) takes them. One given while the config sets its DeepSpeed key to something else would
// change nothing; that is an error naming both keys, so that `--set training.lr=5e-4` never trains
// at the config's lr without a word. (training.steps against a scheduler's total_num_steps is
// judged with the run's length.)
#include "config/config.hpp"
#include "config/diagnostics.hpp"
#include "config/value_sources.hpp"

namespace zt::config {

void check_unused_shorthands(const Config& config, const ValueSources& sources, const Diagnostics& diag);
// Once checked, each of those keys holds the value it stands for as resolved (warmup as a count of
// steps; lr_scheduler_type empty when a scheduler block decides), so that the printed config says
// what the run uses and loads back to itself.
void settle_shorthands(Config& config);

}  // namespace zt::config
