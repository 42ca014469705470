#pragma once
// DeepSpeed's model-state estimators, computed as DeepSpeed computes them, for `zerotrain
// estimate` to show beside its own table (zero/memory_estimate.hpp):
// estimate_zero2_model_states_mem_needs (deepspeed/runtime/zero/stage_1_and_2.py, for stages 1
// and 2) and estimate_zero3_model_states_mem_needs (stage3.py). Ψ parameters, L of them in the
// largest layer (module), G GPUs per node, M nodes, N = G·M, factor f (1.5 by default):
//   zero2, offload_optimizer cpu:   GPU 2Ψ                  host Ψ·max(4N, 16)·f
//   zero2, no offload:              GPU 2Ψ + ⌊18Ψ/N⌋        host 4Ψ·G·f
//   zero3, offload_param and optimizer cpu:  GPU 4L          host 18Ψ/M·f (zero_init), Ψ·max(4G, 18/M)·f
//   zero3, offload_optimizer cpu:    GPU 4L + ⌊2Ψ/N⌋         host 16Ψ/M·f (zero_init), Ψ·max(4G, 16/M)·f
//   zero3, no offload:               GPU 4L + ⌊18Ψ/N⌋        host 4L·G·f (zero_init), 4Ψ·G·f
// Bytes per GPU and per node's host memory, truncated to integers as DeepSpeed's int() does. They
// assume 16-bit mixed precision whatever the training dtype.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace zt {

struct DeepSpeedEstimateInputs {
  uint64_t total_params = 0;          // Ψ
  uint64_t largest_layer_params = 0;  // L; 0 when unknown
  int gpus_per_node = 1;              // G
  int nodes = 1;                      // M
  double additional_buffer_factor = 1.5;
};

struct DeepSpeedEstimate {
  const char* estimator = "";  // "zero2" or "zero3"
  bool offload_param = false, offload_optimizer = false;
  bool zero_init = true;  // zero3 only: parameters partitioned as the model is built
  uint64_t gpu_bytes = 0, host_bytes_per_node = 0;
};

DeepSpeedEstimate deepspeed_zero2_estimate(const DeepSpeedEstimateInputs& in, bool offload_optimizer);
DeepSpeedEstimate deepspeed_zero3_estimate(const DeepSpeedEstimateInputs& in, bool offload_optimizer,
                                           bool offload_param, bool zero_init);
// Every option the two estimators print (their *_all_cold tables), in their order.
std::vector<DeepSpeedEstimate> deepspeed_estimates(const DeepSpeedEstimateInputs& in);

// The largest layer as DeepSpeed's estimate_zero3_model_states_mem_needs_all_live finds it: the
// most parameters one module holds directly (tensors named MODULE.weight, MODULE.bias, ...). A
// layer's experts, stored one by one (MODULE.experts.E.gate_proj.weight, ...), are one module, as
// transformers 5 holds them (gate_up_proj [E, 2I, H] and down_proj of MODULE.experts).
uint64_t largest_module_params(const std::vector<std::pair<std::string, uint64_t>>& named_tensor_sizes);

// The table, and one line on why zerotrain's figures differ.
std::string format_deepspeed_estimates(const DeepSpeedEstimateInputs& in, const std::vector<DeepSpeedEstimate>& rows,
                                       const std::string& largest_layer_source);

}  // namespace zt
