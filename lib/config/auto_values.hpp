#pragma once
// The "auto" table of docs/config.md in one place: what each "auto" becomes, taken from the training
// block, the model shape and the device, the way the Hugging Face Trainer fills them in.
#include <array>
#include <cstdint>

#include "config/config.hpp"

namespace zt::config {

struct AutoValues {
  int64_t micro_batch_size = 0;             // train_micro_batch_size_per_gpu
  int64_t gradient_accumulation_steps = 0;  // gradient_accumulation_steps
  double gradient_clipping = 0;             // gradient_clipping
  double lr = 0;                            // optimizer.params.lr, scheduler warmup_max_lr
  std::array<double, 2> betas{0.9, 0.999};  // optimizer.params.betas
  double eps = 1e-8;                        // optimizer.params.eps
  double weight_decay = 0.0;                // optimizer.params.weight_decay
  double warmup_min_lr = 0;                 // scheduler.params.warmup_min_lr
  int64_t warmup_num_steps = 0;             // scheduler.params.warmup_num_steps
  int64_t total_num_steps = 0;              // scheduler.params.total_num_steps
  bool bf16 = false;                        // bf16.enabled: where the device supports it (fp16.enabled: false)
  int64_t reduce_bucket_size = 0;           // d_model^2
  int64_t stage3_prefetch_bucket_size = 0;  // int(0.9 * d_model^2)
  int64_t stage3_param_persistence_threshold = 0;  // 10 * d_model
};

// `training.steps` must already be resolved.
AutoValues auto_values(const TrainingConfig& training, const ModelConfig& model, const ResolveOptions& options);

}  // namespace zt::config
