#include "train/memory_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include <spdlog/spdlog.h>

#include "core/dtype.hpp"
#include "core/ledger.hpp"
#include "config/model_block.hpp"
#include "model/gpt_activations.hpp"
#include "train/engine_options.hpp"
#include "train/machine_memory.hpp"
#include "zero/memory_estimate.hpp"
#include "zero/partition.hpp"
#include "zero/shard_optimizer.hpp"

namespace zt {

MemoryPlan plan_memory(const config::Config& c, int world, const ModelOps& ops) {
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
  size_t block = shape.block_params();
  size_t bucket = std::min<size_t>(size_t(c.zero.reduce_bucket_size), P);
  size_t slots = c.zero.overlap_comm ? 2 : 1;
  p.buffers_bound = slots * (bucket + std::min(bucket, S)) * comm_d + (largest + block) * 4 * 2;
  if (c.zero.stage == 3)
    p.buffers_bound += std::min<size_t>(size_t(c.zero.stage3_max_live_parameters) + size_t(c.zero.stage3_prefetch_bucket_size),
                                        P) * (4 + d);
  p.host_buffers = ShardOptimizer::staging_bytes(engine_options(c), S);
  p.buffers_bound += p.host_buffers;
  const bool recompute = c.activation_checkpointing.recompute();
  const int B = int(c.train_micro_batch_size_per_gpu), T = int(c.data.seq_len);
  p.activations =
      GptActivations::bytes(shape, B, T, recompute ? 1 : shape.n_layer, ops) + ops.own_bytes(B, T, shape.d_model);
  p.activation_dtype = ops.dtype();
  return p;
}

size_t plan_total(const MemoryPlan& p) { return plan_device_total(p) + p.offload; }

size_t plan_device_total(const MemoryPlan& p) {
  return p.params + p.grads + p.optimizer + p.buffers_bound - p.host_buffers + p.activations;
}

namespace {

double gib(size_t bytes) { return double(bytes) / 1073741824.0; }
std::string show(size_t bytes) {  // GiB, or MiB below one GiB
  return bytes < (size_t(1) << 30) ? fmt::format("{:.1f} MiB", double(bytes) / 1048576.0)
                                   : fmt::format("{:.2f} GiB", gib(bytes));
}

// The warnings of print_memory_plan: a plan that cannot fit where its bytes will live.
void warn_if_too_big(const MemoryPlan& p, int local_ranks, const Device& device) {
  const auto machine = machine_memory_bytes();
  const int here = std::max(1, local_ranks);
  const bool gpu = device.kind() == DeviceKind::Cuda;
  const size_t host_bytes = gpu ? p.offload : plan_total(p);
  if (machine && host_bytes > *machine / size_t(here))
    spdlog::warn("the plan needs {} of host memory per rank, more than this machine's share: {} (MemTotal {} / {} "
                 "rank{} here); a run on this machine would run out of memory",
                 show(host_bytes), show(*machine / size_t(here)), show(*machine), here, here == 1 ? "" : "s");
  const char* lower = "a smaller micro-batch, activation checkpointing, a higher ZeRO stage or offload would bring it "
                      "down";
  if (gpu && plan_device_total(p) > device.memory_bytes())
    spdlog::warn("the plan needs {} of GPU memory per rank, more than {} has: {}; a run would run out of GPU memory "
                 "({})",
                 show(plan_device_total(p)), device.name(), show(device.memory_bytes()), lower);
  const size_t limit = MemoryLedger::instance().limit(MemSpace::Device);
  if (limit > 0 && plan_device_total(p) > limit)
    spdlog::warn("the plan needs {} of device memory per rank, more than its limit of {} ({}); a run would stop at "
                 "set-up or at its first step ({})",
                 show(plan_device_total(p)), show(limit), MemoryLedger::instance().limit_source(MemSpace::Device),
                 lower);
}

}  // namespace

void print_memory_plan(const config::Config& c, int world, int local_ranks, const Backend& backend) {
  MemoryPlan p = plan_memory(c, world, backend.model);
  const bool gpu = backend.device.kind() == DeviceKind::Cuda;
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
  const std::string staging =
      p.host_buffers ? fmt::format(", {:.2f} MiB of offload staging in host memory", mib(p.host_buffers)) : "";
  std::printf("  %-12s <= %9.2f MiB   transient (buckets, gathered groups, fp32 views%s)\n", "buffers",
              mib(p.buffers_bound), staging.c_str());
  std::printf("  %-12s %12.2f MiB   micro-batch %lld x %lld tokens, %s%s\n", "activations", mib(p.activations),
              (long long)c.train_micro_batch_size_per_gpu, (long long)c.data.seq_len,
              std::string(dtype_name(p.activation_dtype)).c_str(),
              c.activation_checkpointing.recompute() ? ", one block kept (activation checkpointing)" : "");
  if (gpu) {
    std::printf("  %-12s <= %9.2f MiB   everything above but offload, GPU memory (%s, %.2f GiB)\n", "per rank",
                mib(plan_device_total(p)), backend.device.name().c_str(), gib(backend.device.memory_bytes()));
    if (p.offload) std::printf("  %-12s    %9.2f MiB   offload, host memory\n", "", mib(p.offload));
  } else {
    std::printf("  %-12s <= %9.2f MiB   everything above, host memory\n", "per rank", mib(plan_total(p)));
  }
  std::fflush(stdout);
  warn_if_too_big(p, local_ranks, backend.device);
}

}  // namespace zt
