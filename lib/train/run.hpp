#pragma once
// Entry point of a training run: everything after the config is resolved.
#include <functional>

#include "comm/world.hpp"
#include "config/config.hpp"

namespace zt {

struct RunOptions {
  bool dry_run = false;  // resolve, build the model and engine plan, print the memory plan, exit
  std::function<void()> set_up = {};  // called on every rank once set-up has succeeded, before step 1
};

// Runs on every rank of `world`. Returns the process exit code.
int run_training(const World& world, const config::Config& config, const RunOptions& options);

}  // namespace zt
