#include "train/engine_options.hpp"

namespace zt {

namespace {

OffloadDevice offload_device(const std::string& device) {
  if (device == "cpu") return OffloadDevice::Cpu;
  if (device == "nvme") return OffloadDevice::Nvme;
  return OffloadDevice::None;
}

}  // namespace

EngineOptions engine_options(const config::Config& c) {
  EngineOptions o;
  const auto& z = c.zero;
  o.stage = z.stage;
  o.dtype = dtype_from_name(c.dtype());
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
  o.fp16 = c.fp16.enabled;
  const auto& f = c.fp16;
  o.loss_scaler = {f.loss_scale, f.initial_scale_power, f.loss_scale_window, f.hysteresis, f.consecutive_hysteresis,
                   f.min_loss_scale};
  o.bf16_check_overflow = c.bf16.check_grad_overflow;
  o.offload_optimizer = offload_device(z.offload_optimizer.device);
  o.offload_param = z.stage == 3 ? offload_device(z.offload_param.device) : OffloadDevice::None;
  return o;
}

}  // namespace zt
