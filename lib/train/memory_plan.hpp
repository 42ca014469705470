#pragma once
// The per-rank memory plan printed by --dry-run: what the engine will allocate per category for
// this config and world size, beside the ZeRO formula, before anything is allocated.
#include <string>

#include "config/config.hpp"
#include "kernels/backend.hpp"
#include "zero/engine.hpp"

namespace zt {

// The engine's plan (zero/engine.hpp) and the model's.
struct MemoryPlan : EnginePlan {
  size_t num_params = 0;
  size_t activations = 0;  // the model's forward results and backward scratch for one micro-batch
  DType activation_dtype = DType::F32;  // what the backend's model operators compute in
};

// `ops`: the model operators the run computes with; their dtype and their attention (the CPU keeps
// a T x T matrix per head, the GPU one value per row) size the activations.
MemoryPlan plan_memory(const config::Config& config, int world_size, const ModelOps& ops = cpu_backend().model);
// Bytes one rank holds at most: model states, transient buffers and activations.
size_t plan_total(const MemoryPlan& plan);
// Of those, the bytes in the device's own memory: everything but what offload moves to the host.
size_t plan_device_total(const MemoryPlan& plan);
// Prints the plan for `backend` (MiB and exact bytes: the figures equal what the run's ledger
// records per rank), and warns on stderr when a rank's plan exceeds what it will have: on the CPU
// its share of this machine's memory (MemTotal divided among the `local_ranks` ranks on it), on a
// GPU the GPU's memory for what lives there and the host share for what offload moves out.
void print_memory_plan(const config::Config& config, int world_size, int local_ranks, const Backend& backend);

}  // namespace zt
