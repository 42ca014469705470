#pragma once
// Where a run's weights start, as a Hugging Face user expects: `--model DIR` (model.path) loads the
// directory's own weights, as from_pretrained does, unless training.init_from says otherwise: a
// model directory, a safetensors file or a checkpoint to take them from, or "random" for random
// values of the architecture (from_config). Without model.path they start random.
#include <string>

#include "config/config.hpp"
#include "config/diagnostics.hpp"
#include "config/value_sources.hpp"

namespace zt::config {

// Sets training.init_from to the path the weights come from, or "random", and returns the start
// line's account of it ("weights from DIR (model.path: ...)").
std::string resolve_initial_weights(Config& config, const ValueSources& sources);

}  // namespace zt::config
