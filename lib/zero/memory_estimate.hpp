#pragma once
// Per-rank model-state memory of ZeRO stages 0-3, with and without offload, in the spirit of
// DeepSpeed's estimators (ZeRO paper, table 1). Ψ parameters, N ranks on M nodes:
//   mixed precision (16-bit params and grads, fp32 master + Adam m + v): 2 + 2 + 12 bytes/param
//   fp32 training (params, grads, Adam m + v):                           4 + 4 + 8  bytes/param
// Stage 1 shards the optimizer state, stage 2 also the gradients, stage 3 also the parameters.
// Offloaded state lives in host memory, reported per node (N/M ranks each).
#include <cstdint>
#include <string>
#include <vector>

namespace zt {

struct MemoryEstimateOptions {
  uint64_t num_params = 0;  // Ψ
  int world_size = 1;       // N, all ranks
  int nodes = 1;            // M; must divide N
  std::string dtype = "bf16";  // bf16 | fp16 (16-bit mixed precision) | fp32
  // Expert parallelism: of num_params, the experts', split over groups of autoep_size ranks; a
  // rank holds the experts of its place, Ψ' = expert_params / autoep_size, sharded over the
  // M = N / autoep_size ranks holding the same, and the rest, Ψ = num_params - expert_params, over N.
  uint64_t expert_params = 0;
  int autoep_size = 1;
};

enum class Offload { None, Optimizer, OptimizerAndParams };

struct MemoryEstimateRow {
  int stage = 0;
  Offload offload = Offload::None;
  // Bytes per rank on the device (params, grads, optimizer) and offloaded bytes per rank.
  double params = 0, grads = 0, optimizer = 0;
  double offloaded = 0;
  double device_total() const { return params + grads + optimizer; }
  double host_per_node = 0;  // offloaded bytes of all ranks on one node
  std::string formula;       // device bytes per rank in Ψ and N, e.g. "2Ψ + 14Ψ/N"
  std::string host_formula;  // offloaded bytes per rank, e.g. "12Ψ/N"; empty without offload
};

struct BytesPerParam {
  int params, grads, optimizer;
};
BytesPerParam bytes_per_param(const std::string& dtype);  // throws zt::Error for an unknown dtype

// Rows for stages 0-3 without offload, then optimizer offload (stages 1-3), then optimizer and
// parameter offload (stage 3). Throws zt::Error on bad options.
std::vector<MemoryEstimateRow> estimate_model_state_memory(const MemoryEstimateOptions& options);

// The table a person reads: one line per row in GiB, with the formula.
std::string format_memory_estimate(const MemoryEstimateOptions& options, const std::vector<MemoryEstimateRow>& rows);

const char* offload_name(Offload offload);

// A number of parameters as a person writes it: 124439808, 1.5e9, or with a suffix k, m, b (or g),
// t in either case: 350m, 7b, 1.5B. Throws zt::Error starting with `label` ("estimate --params")
// and quoting `text` when it is not a positive whole number of parameters.
uint64_t parse_param_count(const std::string& text, const std::string& label);

// The world size a launcher gave this process (OMPI_COMM_WORLD_SIZE, PMI_SIZE, SLURM_NTASKS,
// WORLD_SIZE, the first set), and which variable said so; 1 and "" when none did.
struct LauncherWorldSize {
  int ranks = 1;
  std::string variable;
};
LauncherWorldSize launcher_world_size();

}  // namespace zt
