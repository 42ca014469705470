#pragma once
// The resolved config of a run, kept beside its metrics: <training.metrics>.config.json, so that
// a metrics file always comes with the settings that produced it. The console shows the same JSON
// only at --log-level debug.
#include <string>

#include "config/config.hpp"

namespace zt {

// "<training.metrics>.config.json", or "" when training.metrics is not set.
std::string resolved_config_path(const config::Config& config);

// Writes the file (rank 0); throws zt::Error naming the path when it cannot.
void write_resolved_config_file(const config::Config& config);

// The resolved config at debug level: where it came from and the JSON.
void log_resolved_config(const config::Config& config);

}  // namespace zt
