#pragma once
// A short training run of a preset on the shipped corpus, for the tests that watch a GPU step:
// 32-token sequences, two micro-batches a step, buckets that cut groups in odd places, gradient
// clipping on.
#include <string>

#include "config/config.hpp"
#include "config/model_block.hpp"
#include "tinytext_run.hpp"

namespace zt::test {

inline config::Config step_config(const std::string& model, int stage, const std::string& dtype, int world_size = 1) {
  config::Config c;
  c.world_size = world_size;
  c.train_micro_batch_size_per_gpu = 2;
  c.gradient_accumulation_steps = 2;
  c.train_batch_size = 4 * world_size;
  c.gradient_clipping = 1.0;
  c.zero.stage = stage;
  c.zero.reduce_bucket_size = 10000;
  c.zero.allgather_bucket_size = 10333;
  c.zero.overlap_comm = true;
  c.zero.stage3_param_persistence_threshold = 0;
  c.zero.stage3_prefetch_bucket_size = 30000;
  c.zero.stage3_max_live_parameters = 200000;
  c.bf16.enabled = dtype == "bf16";
  c.communication_data_type = dtype;
  c.optimizer.lr = 3e-3;
  c.model = config::resolve_model_argument(model);
  short_tinytext_run(c, 32);
  return c;
}

}  // namespace zt::test
