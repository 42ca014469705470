#pragma once
// Everything the ZeRO engine is told, as plain values (the trainer makes them from the DeepSpeed
// config; zero/ knows nothing of JSON or config blocks).
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/loss_scaler_options.hpp"
#include "core/offload_device.hpp"
#include "zero/async_file.hpp"

namespace zt {

struct OptimizerOffload {
  OffloadDevice device = OffloadDevice::None;
  std::string nvme_path;
  bool pin_memory = true;
  int buffer_count = 4;              // sub-groups in host memory at once (nvme)
  size_t sub_group_size = 1000000000;  // elements updated as one piece
};

struct ParamOffload {
  OffloadDevice device = OffloadDevice::None;
  std::string nvme_path;
  bool pin_memory = true;
  int buffer_count = 5;         // group pieces read ahead from the file (nvme)
  size_t buffer_size = 100000000;  // elements: the largest piece one read may bring
  size_t max_in_cpu = 1000000000;  // elements held in host memory by the read-ahead (nvme)
};

struct EngineOptions {
  int stage = 0;
  DType dtype = DType::F32;       // parameters and gradients as stored and communicated in
  DType comm_dtype = DType::F32;  // gradient reductions
  int64_t gradient_accumulation_steps = 1;
  double gradient_clipping = 0;  // global L2 norm; 0: off
  bool prescale_gradients = false;
  double gradient_predivide_factor = 1.0;

  // Buckets and overlap (elements).
  size_t reduce_bucket_size = 500000000;
  size_t allgather_bucket_size = 500000000;
  bool overlap_comm = false;
  // Stage 3 (elements).
  size_t prefetch_bucket_size = 50000000;
  size_t param_persistence_threshold = 100000;
  size_t max_live_parameters = 1000000000;
  size_t max_reuse_distance = 1000000000;
  // The order the model fetches groups in during one forward and backward, when the model knows
  // it; empty: stage 3 records it during the first micro-batch (no prefetch until then).
  std::vector<int> fetch_order;

  // AdamW (lr and betas come per step from the schedule).
  double adam_eps = 1e-8;
  double weight_decay = 0.0;
  bool bias_correction = true;
  bool adam_w_mode = true;

  LossScalerOptions loss_scaler;  // fp16 (dtype F16): dynamic loss scaling
  bool bf16_check_overflow = true;  // bf16: an inf/nan gradient skips the step

  OptimizerOffload offload_optimizer;
  ParamOffload offload_param;  // stage 3 only
  AioOptions aio;              // DeepSpeed's aio block, for NVMe offload: what AsyncFile runs by
  int rank = 0;  // names this rank's offload files
};

}  // namespace zt
