#pragma once
// Where the settings a run is most easily wrong about came from (learning rate, schedule, batch,
// precision): the key that decided each and how it was given (the config, an option, "auto" and the
// training key it took, or the default). The start line prints them.
#include <string>

#include "config/config.hpp"
#include "config/value_sources.hpp"

namespace zt::config {

// The learning rate the schedule peaks at (starts from, for LRRangeTest).
double peak_lr(const Config& config);
// The key whose value that is.
struct LrKey {
  std::string key;
  bool takes_auto = false;  // "auto" there takes training.lr
};
LrKey decisive_lr_key(const Config& config, const ValueSources& sources);

Provenance explain_provenance(const Config& config, const ValueSources& sources);
// One line each: "length 200 steps from ...", "lr 0.0003 from ...", "schedule ...", "batch ...", "precision ...".
void log_provenance(const Config& config);

}  // namespace zt::config
