#pragma once
// The per-rank memory plan printed by --dry-run: what the engine will allocate per category for
// this config and world size, beside the ZeRO formula, before anything is allocated.
#include <string>

#include "config/config.hpp"

namespace zt {

struct MemoryPlan {
  size_t num_params = 0, padded = 0, shard = 0;
  size_t params = 0, grads = 0, optimizer = 0, offload = 0;
  size_t buffers_bound = 0;  // buckets, gathered groups, fp32 group views and gradients
  size_t activations = 0;    // the model's forward results and backward scratch for one micro-batch
  std::string formula;       // device bytes per rank, e.g. "2Ψ + 14Ψ/N"
};

MemoryPlan plan_memory(const config::Config& config, int world_size);
// Host bytes one rank holds at most: model states, transient buffers and activations (the CPU
// backend keeps everything in host memory).
size_t plan_total(const MemoryPlan& plan);
// Prints the plan (MiB and exact bytes: the figures equal what the run's ledger records per rank),
// and warns on stderr when a rank's plan exceeds its share of this machine's memory (MemTotal
// divided among the `local_ranks` ranks on it).
void print_memory_plan(const config::Config& config, int world_size, int local_ranks);

}  // namespace zt
