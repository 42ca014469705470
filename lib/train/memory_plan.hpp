#pragma once
// The per-rank memory plan printed by --dry-run: what the engine will allocate per category for
// this config and world size, beside the ZeRO formula, before anything is allocated.
#include <optional>
#include <string>

#include "config/config.hpp"
#include "data/data_sampler.hpp"
#include "kernels/backend.hpp"
#include "zero/engine.hpp"

namespace zt {

// The engine's plan (zero/engine.hpp), the model's and the checkpoints'.
struct MemoryPlan : EnginePlan {
  size_t checkpoint_staging = 0;  // of buffers_bound and host_buffers: training.checkpoint_dir's staging
  size_t num_params = 0;  // the model's and its LoRA adapters'
  // Expert parallelism: the experts of a rank's place, the engine's second domain over the ranks
  // holding the same experts (numel 0 without), and the rest's elements, over every rank.
  SecondDomainSize experts;
  size_t rest = 0;
  // Under a 16-bit dtype, F: the parameters kept in fp32 (data_types.keep_in_fp32_modules), their
  // fp32 copy on every rank, and of them the trained ones, whose fp32 gradients every rank holds.
  size_t kept_fp32 = 0, kept_fp32_trained = 0;
  // With frozen parameters: the engine's plan if every parameter trained (what freezing saves).
  std::optional<EnginePlan> unfrozen;
  // The model's forward results and backward scratch (LoRA's included), the trainer's token
  // staging, the engine's step values.
  size_t activations = 0;
  size_t host_activations = 0;  // of activations, the bytes in host (pinned) memory
  // The LM head: the most rows it computes in a micro-batch (those whose target counts, as the data
  // bounds them; B·T without a bound) and the rows of logits it holds at once.
  int head_rows = 0, logit_rows = 0;
  DType activation_dtype = DType::F32;  // what the backend's model operators compute in
};

// `ops`: the model operators the run computes with; their dtype, their attention's saved floats and
// scratch, and their own buffers size the activations. `samples`: the data has samples, whose
// micro-batches carry their RowSegments (train/run_data.hpp, has_samples). `head_rows`: the most
// targets that count in a micro-batch (planned_head_rows; 0: every target of B·T).
MemoryPlan plan_memory(const config::Config& config, int world_size, const ModelOps& ops = cpu_backend().model,
                       bool samples = false, int head_rows = 0);
// The most targets that count in a micro-batch of training or evaluation: the LM head's rows.
int planned_head_rows(const DataSampler& train, const DataSampler* val);
// Bytes of memory one rank holds at most: model states, transient buffers and activations (not
// what offload keeps in files).
size_t plan_total(const MemoryPlan& plan);
// Of those, the bytes in the device's own memory: everything but what lives in host memory
// (offloaded state, offload and checkpoint staging, the trainer's token staging).
size_t plan_device_total(const MemoryPlan& plan);
// Of plan_total, the offloaded state in host memory.
size_t plan_offload_in_memory(const MemoryPlan& plan);
// Prints the plan for `backend` (MiB and exact bytes: the figures equal what the run's ledger
// records per rank), and warns on stderr when a rank's plan exceeds what it will have: on the CPU
// its share of this machine's memory (MemTotal divided among the `local_ranks` ranks on it), on a
// GPU the GPU's memory for what lives there and the host share for what offload moves out.
void print_memory_plan(const config::Config& config, int world_size, int local_ranks, const Backend& backend,
                       bool samples = false, int head_rows = 0);

}  // namespace zt
