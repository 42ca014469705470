#pragma once
// How many steps a run trains, from the first of: training.steps as given (the config, --steps,
// --set), training.epochs (passes over data.train's windows or rows of samples), the scheduler's
// total_num_steps (a number, not "auto"), the default. Sources that disagree with the one taken
// are warned about, naming the one that wins.
#include <string>

#include "config/config.hpp"
#include "config/diagnostics.hpp"
#include "config/value_sources.hpp"

namespace zt::config {

// Sets c.training.steps (the data and the batch sizes must be resolved) and returns the start
// line's explanation of it. training.epochs counts the windows of data.train (its files' sizes,
// not their tokens): steps = ceil(epochs * windows / (accumulation * world size)); for record data
// (samples, docs/data.md) the rows of its samples: steps = ceil(epochs * rows / (micro-batch *
// accumulation * world size)). Resuming from `resumed`, the epochs left from its position at this
// run's batch: steps = resumed step + ceil((epochs - epochs read) * units / units per step).
std::string resolve_training_length(Config& c, const ValueSources& sources, const Diagnostics& diag,
                                    const std::optional<ResumedPosition>& resumed = std::nullopt);

}  // namespace zt::config
