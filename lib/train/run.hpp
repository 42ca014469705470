#pragma once
// Entry point of a training run: everything after the config is resolved.
#include "config/config.hpp"

namespace zt {

struct RunOptions {
  bool dry_run = false;  // resolve, build the model and engine plan, print the memory plan, exit
};

// Runs on every rank (MPI already initialised by the caller). Returns the process exit code.
int run_training(const config::Config& config, const RunOptions& options);

}  // namespace zt
