#include "train/engine_config.hpp"

#include <cstdint>

namespace zt {

EngineOptions engine_options(const config::Config& c) {
  EngineOptions o;
  const auto& z = c.zero;
  o.stage = z.stage;
  o.dtype = c.training_dtype();
  o.comm_dtype = dtype_from_name(c.communication_data_type.empty() ? c.dtype() : c.communication_data_type);
  o.gradient_accumulation_steps = c.gradient_accumulation_steps;
  o.gradient_clipping = c.gradient_clipping;
  o.prescale_gradients = c.prescale_gradients;
  o.gradient_predivide_factor = c.gradient_predivide_factor;
  o.reduce_bucket_size = size_t(z.reduce_bucket_size);
  o.allgather_bucket_size = size_t(z.allgather_bucket_size);
  o.overlap_comm = z.overlap_comm;
  o.prefetch_bucket_size = size_t(z.stage3_prefetch_bucket_size);
  o.param_persistence_threshold = size_t(z.stage3_param_persistence_threshold);
  o.max_live_parameters = size_t(z.stage3_max_live_parameters);
  o.max_reuse_distance = size_t(z.stage3_max_reuse_distance);
  const auto& opt = c.optimizer;
  o.adam_eps = opt.eps;
  o.weight_decay = opt.weight_decay;
  o.bias_correction = opt.bias_correction;
  o.adam_w_mode = opt.adam_w_mode;
  const auto& f = c.fp16;
  o.loss_scaler = {f.loss_scale, f.initial_scale_power, f.loss_scale_window, f.hysteresis, f.consecutive_hysteresis,
                   f.min_loss_scale};
  o.bf16_check_overflow = c.bf16.check_grad_overflow;
  const auto& oo = z.offload_optimizer;
  o.offload_optimizer = {oo.device, oo.nvme_path, oo.pin_memory, int(oo.buffer_count),
                         z.sub_group_size > 0 ? size_t(z.sub_group_size) : SIZE_MAX};
  if (z.stage == 3) {
    const auto& op = z.offload_param;
    o.offload_param = {op.device, op.nvme_path, op.pin_memory, int(op.buffer_count),
                       size_t(op.buffer_size), size_t(op.max_in_cpu)};
  }
  o.aio = {size_t(c.aio.block_size), int(c.aio.queue_depth), int(c.aio.intra_op_parallelism)};
  return o;
}

}  // namespace zt
