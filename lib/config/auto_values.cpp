#include "config/auto_values.hpp"

namespace zt::config {

AutoValues auto_values(const TrainingConfig& t, const ModelConfig& m, const ResolveOptions& o) {
  AutoValues a;
  a.micro_batch_size = t.micro_batch_size;
  a.gradient_accumulation_steps = t.gradient_accumulation_steps;
  a.gradient_clipping = t.max_grad_norm;
  a.lr = t.lr;
  a.betas = {t.adam_beta1, t.adam_beta2};
  a.eps = t.adam_epsilon;
  a.weight_decay = t.weight_decay;
  a.warmup_num_steps = t.warmup_step_count();
  a.total_num_steps = t.steps;
  // The CPU backend computes in fp32 and stores bf16; GPUs need compute capability 8.0 for bf16.
  a.bf16 = o.gpu_supports_bf16 || o.cpu_backend;
  const int64_t d = m.shape.d_model;
  a.reduce_bucket_size = d * d;
  a.stage3_prefetch_bucket_size = int64_t(0.9 * double(d * d));
  a.stage3_param_persistence_threshold = 10 * d;
  return a;
}

}  // namespace zt::config
