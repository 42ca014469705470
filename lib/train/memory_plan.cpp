#include "train/memory_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include <spdlog/spdlog.h>

#include "core/dtype.hpp"
#include "config/model_block.hpp"
#include "model/gpt_activations.hpp"
#include "train/machine_memory.hpp"
#include "zero/memory_estimate.hpp"
#include "zero/partition.hpp"

namespace zt {

MemoryPlan plan_memory(const config::Config& c, int world) {
  GptShape shape = config::shape_of(c.model);
  Partition part(shape.flat_size(), world, 0);
  const size_t P = part.padded(), S = part.shard_size();
  const size_t d = dtype_size(dtype_from_name(c.dtype()));
  const size_t comm_d = dtype_size(dtype_from_name(c.communication_data_type.empty() ? c.dtype() : c.communication_data_type));
  MemoryPlan p;
  p.num_params = shape.num_params();
  p.padded = P;
  p.shard = S;
  // Model states: the estimator's row for this stage and offload, over the padded flat buffer.
  Offload offload = c.zero.offload_param.device != "none"       ? Offload::OptimizerAndParams
                    : c.zero.offload_optimizer.device != "none" ? Offload::Optimizer
                                                                : Offload::None;
  for (auto& row : estimate_model_state_memory({P, world, 1, c.dtype()}))
    if (row.stage == c.zero.stage && row.offload == offload) {
      p.params = size_t(row.params);
      p.grads = size_t(row.grads);
      p.optimizer = size_t(row.optimizer);
      p.offload = size_t(row.offloaded);
      p.formula = row.formula;
    }

  // Transient: bucket slots, the largest groups' fp32 gradients and views, gathered groups.
  size_t largest = size_t(shape.padded_vocab()) * size_t(shape.d_model);
  size_t block = 12 * size_t(shape.d_model) * size_t(shape.d_model) + 13 * size_t(shape.d_model);
  size_t bucket = std::min<size_t>(size_t(c.zero.reduce_bucket_size), P);
  size_t slots = c.zero.overlap_comm ? 2 : 1;
  p.buffers_bound = slots * (bucket + std::min(bucket, S)) * comm_d + (largest + block) * 4 * 2;
  if (c.zero.stage == 3)
    p.buffers_bound += std::min<size_t>(size_t(c.zero.stage3_max_live_parameters) + size_t(c.zero.stage3_prefetch_bucket_size),
                                        P) * (4 + d);
  const bool recompute = c.activation_checkpointing.recompute();
  p.activations = GptActivations::bytes(shape, int(c.train_micro_batch_size_per_gpu), int(c.data.seq_len),
                                        recompute ? 1 : shape.n_layer);
  return p;
}

size_t plan_total(const MemoryPlan& p) {
  return p.params + p.grads + p.optimizer + p.offload + p.buffers_bound + p.activations;
}

void print_memory_plan(const config::Config& c, int world, int local_ranks) {
  MemoryPlan p = plan_memory(c, world);
  auto mib = [](size_t b) { return double(b) / 1048576.0; };
  std::printf("memory plan per rank: ZeRO stage %d, %d rank%s, %s\n", c.zero.stage, world, world == 1 ? "" : "s",
              c.dtype().c_str());
  std::printf("  parameters Ψ = %zu (flat buffer padded to %zu, shard %zu)\n", p.num_params, p.padded, p.shard);
  std::printf("  %-12s %12.2f MiB (%zu bytes)\n", "params", mib(p.params), p.params);
  std::printf("  %-12s %12.2f MiB (%zu bytes)\n", "grads", mib(p.grads), p.grads);
  std::printf("  %-12s %12.2f MiB (%zu bytes)\n", "optimizer", mib(p.optimizer), p.optimizer);
  if (p.offload) std::printf("  %-12s %12.2f MiB (%zu bytes, host)\n", "offload", mib(p.offload), p.offload);
  std::printf("  %-12s %12.2f MiB   model states; formula %s\n", "total",
              mib(p.params + p.grads + p.optimizer + p.offload), p.formula.c_str());
  std::printf("  %-12s <= %9.2f MiB   transient (buckets, gathered groups, fp32 views)\n", "buffers", mib(p.buffers_bound));
  std::printf("  %-12s %12.2f MiB   micro-batch %lld x %lld tokens, fp32%s\n", "activations", mib(p.activations),
              (long long)c.train_micro_batch_size_per_gpu, (long long)c.data.seq_len,
              c.activation_checkpointing.recompute() ? ", one block kept (activation checkpointing)" : "");
  const size_t total = plan_total(p);
  std::printf("  %-12s <= %9.2f MiB   everything above, host memory\n", "per rank", mib(total));
  std::fflush(stdout);

  const auto machine = machine_memory_bytes();
  const int here = std::max(1, local_ranks);
  if (machine && total > *machine / size_t(here))
    spdlog::warn("the plan needs {:.2f} GiB per rank, more than this machine's share: {:.2f} GiB (MemTotal {:.2f} "
                 "GiB / {} rank{} here); a run on this machine would run out of memory",
                 double(total) / 1073741824.0, double(*machine / size_t(here)) / 1073741824.0,
                 double(*machine) / 1073741824.0, here, here == 1 ? "" : "s");
}

}  // namespace zt
