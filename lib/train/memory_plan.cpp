#include "train/memory_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "core/dtype.hpp"
#include "model/gpt_shape.hpp"
#include "zero/partition.hpp"

namespace zt {

MemoryPlan plan_memory(const config::Config& c, int world) {
  GptShape shape{c.model.n_layer, c.model.n_head, c.model.d_model, c.model.vocab_size, c.model.max_seq_len};
  Partition part(shape.flat_size(), world, 0);
  const size_t d = dtype_size(dtype_from_name(c.dtype()));
  const size_t comm_d = dtype_size(dtype_from_name(c.communication_data_type.empty() ? c.dtype() : c.communication_data_type));
  const size_t P = part.padded(), S = part.shard_size();
  const int stage = c.zero.stage;
  MemoryPlan p;
  p.num_params = shape.num_params();
  p.padded = P;
  p.shard = S;
  p.params = (stage < 3 ? P : S) * d;
  p.grads = (stage < 2 ? P : S) * d;
  size_t state = (stage == 0 ? P : S) * (d == 4 ? 8 : 12);
  (c.zero.offload_optimizer.device == "none" ? p.optimizer : p.offload) = state;
  static const char* mixed[] = {"16Ψ", "4Ψ + 12Ψ/N", "2Ψ + 14Ψ/N", "16Ψ/N"};
  p.formula = mixed[stage];

  // Transient: bucket slots, the largest groups' fp32 gradients and views, gathered groups.
  size_t largest = size_t(shape.padded_vocab()) * size_t(shape.d_model);
  size_t block = 12 * size_t(shape.d_model) * size_t(shape.d_model) + 13 * size_t(shape.d_model);
  size_t bucket = std::min<size_t>(size_t(c.zero.reduce_bucket_size), P);
  size_t slots = c.zero.overlap_comm ? 2 : 1;
  p.buffers_bound = slots * (bucket + std::min(bucket, S)) * comm_d + (largest + block) * 4 * 2;
  if (stage == 3)
    p.buffers_bound += std::min<size_t>(size_t(c.zero.stage3_max_live_parameters) + size_t(c.zero.stage3_prefetch_bucket_size),
                                        P) * (4 + d);
  return p;
}

void print_memory_plan(const config::Config& c, int world) {
  MemoryPlan p = plan_memory(c, world);
  auto mib = [](size_t b) { return double(b) / 1048576.0; };
  std::printf("memory plan per rank: ZeRO stage %d, %d ranks, %s\n", c.zero.stage, world, c.dtype().c_str());
  std::printf("  parameters Ψ = %zu (flat buffer padded to %zu, shard %zu)\n", p.num_params, p.padded, p.shard);
  std::printf("  %-12s %12.2f MiB\n", "params", mib(p.params));
  std::printf("  %-12s %12.2f MiB\n", "grads", mib(p.grads));
  std::printf("  %-12s %12.2f MiB\n", "optimizer", mib(p.optimizer));
  if (p.offload) std::printf("  %-12s %12.2f MiB (host)\n", "offload", mib(p.offload));
  std::printf("  %-12s %12.2f MiB   model states; formula %s (mixed precision)\n", "total",
              mib(p.params + p.grads + p.optimizer + p.offload), p.formula);
  std::printf("  %-12s <= %9.2f MiB   transient (buckets, gathered groups, fp32 views)\n", "buffers", mib(p.buffers_bound));
}

}  // namespace zt
