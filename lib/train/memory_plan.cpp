#include "train/memory_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include <spdlog/spdlog.h>

#include "core/dtype.hpp"
#include "core/ledger.hpp"
#include "core/machine_memory.hpp"
#include "model/expert_layout.hpp"
#include "model/gpt_activations.hpp"
#include "model/lora_adapters.hpp"
#include "train/engine_config.hpp"
#include "train/preference.hpp"
#include "train/run_checkpoints.hpp"
#include "train/trainer.hpp"

namespace zt {

namespace {

// The formula's terms of the parameters kept in fp32 (F of them, `trained` of which train): their
// fp32 copy, 4 bytes each, and the trained ones' fp32 gradients, 4 more.
std::string kept_terms(size_t kept, size_t trained) {
  if (kept == 0) return "";
  if (trained == kept) return " + 8F";
  return trained == 0 ? " + 4F" : " + 4F + 4Fₜ";
}

}  // namespace

int planned_head_rows(const DataSampler& train, const DataSampler* val) {
  return std::max(train.max_counted_targets(), val ? val->max_counted_targets() : 0);
}

MemoryPlan plan_memory(const config::Config& c, int world, const ModelOps& ops, bool samples, int head_rows) {
  const GptShape& shape = c.model.shape;
  const TrainedParts parts = config::trained_parts(c);
  const ParamLayout layout = make_training_layout(shape, parts);
  // The groups the model holds at once at most: the embedding matrix (an untied head is as large),
  // and one block with its adapters.
  const size_t adapters = parts.lora.enabled() ? layout.groups[size_t(lora_group(shape, 0))].size : 0;
  const size_t held = size_t(shape.padded_vocab()) * size_t(shape.d_model) + shape.max_block_params() + adapters;
  MemoryPlan p;
  const EngineOptions options = engine_options(c);
  // Expert parallelism: a rank's own experts (the first place's) are a second domain over the
  // ranks holding the same experts (model/expert_layout.hpp).
  const int ep = c.expert_parallel.size();
  const ParamLayout own = expert_parallel_layout(shape, layout, {ep, 0});
  size_t numel = 0, trainable = 0;
  SecondDomainSize second, second_unfrozen;
  for (const ParamGroup& g : own.groups) {
    size_t trained = 0;
    for (const TensorSpec& t : g.tensors) trained += t.trainable ? t.numel() : 0;
    if (g.domain == 0) {
      numel += g.size;
      trainable += trained;
    } else {
      second = {second.numel + g.size, second.trainable + trained, world / ep};
      second_unfrozen = {second.numel, second.numel, world / ep};
    }
  }
  p.experts = second;
  p.rest = numel;
  const size_t fp32 = Fp32Parts::bytes(own, options.dtype), fp32_grads = Fp32Parts::grad_bytes(own, options.dtype);
  static_cast<EnginePlan&>(p) = Engine::plan(options, numel, trainable, world, held, second, fp32);
  p.kept_fp32 = fp32 / sizeof(float);
  p.kept_fp32_trained = fp32_grads / sizeof(float);
  p.grads += fp32_grads;
  p.formula += kept_terms(p.kept_fp32, p.kept_fp32_trained);
  p.num_params = shape.num_params() + (layout.total - shape.flat_size());
  if (layout.has_frozen()) {
    p.unfrozen = Engine::plan(options, numel, numel, world, held, second_unfrozen, fp32);
    p.unfrozen->grads += fp32;
    p.unfrozen->formula += kept_terms(p.kept_fp32, p.kept_fp32);
  }
  const bool recompute = c.recompute_activations();
  const int B = int(c.micro_batch_rows()), T = int(c.data.seq_len);
  const int slots = recompute ? 1 : shape.n_layer;
  p.host_activations = Trainer::staging_bytes(c, samples) + p.step_values_host;
  p.head_rows = head_rows > 0 ? std::min(head_rows, B * T) : B * T;
  p.logit_rows = logit_rows(shape, size_t(p.head_rows), ops.dtype());
  p.activations = GptActivations::bytes(shape, B, T, slots, ops, kLogitsBytes, head_rows) +
                  MoeBlock::bytes(shape, B, T, slots, ops, c.expert_parallel.size(), layout.fp32_numel() > 0) +
                  ops.own_bytes(B, T, shape.d_model) + LoraAdapters::bytes(shape, parts.lora, B, T, slots, ops) +
                  Trainer::staging_bytes(c, samples) + p.step_values;
  p.activation_dtype = ops.dtype();
  p.checkpoint_staging = RunCheckpoints::staging_bytes(c, Partition(layout.trainable_numel(), world, 0));
  p.buffers_bound += p.checkpoint_staging;
  p.host_buffers += p.checkpoint_staging;
  return p;
}

size_t plan_offload_in_memory(const MemoryPlan& p) { return p.offload - p.offload_files; }

size_t plan_total(const MemoryPlan& p) {
  return plan_device_total(p) + p.host_buffers + p.host_activations + plan_offload_in_memory(p);
}

size_t plan_device_total(const MemoryPlan& p) {
  return p.params + p.grads + p.optimizer + p.buffers_bound - p.host_buffers + p.activations - p.host_activations;
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
  const size_t host_bytes = gpu ? plan_offload_in_memory(p) + p.host_buffers : plan_total(p);
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

void print_memory_plan(const config::Config& c, int world, int local_ranks, const Backend& backend, bool samples,
                       int head_rows) {
  MemoryPlan p = plan_memory(c, world, backend.model, samples, head_rows);
  const bool gpu = backend.device.kind() == DeviceKind::Cuda;
  auto mib = [](size_t b) { return double(b) / 1048576.0; };
  std::printf("memory plan per rank: ZeRO stage %d, %d rank%s, %s\n", c.zero.stage, world, world == 1 ? "" : "s",
              c.dtype().c_str());
  const GptShape& shape = c.model.shape;
  if (p.experts.numel == 0) {
    std::printf("  parameters Ψ = %zu (flat buffer padded to %zu, shard %zu)\n", p.num_params, p.padded, p.shard);
  } else {  // expert parallelism: the experts of a place over its M ranks, the rest over all N
    const int ep = c.expert_parallel.size(), M = p.experts.world_size;
    const Partition experts(p.experts.numel, M, 0);
    std::printf("  parameters %zu in all; Ψ = %zu of them over the N = %d ranks (flat buffer padded to %zu, shard "
                "%zu)\n",
                p.num_params, p.rest, world, p.padded, p.shard);
    std::printf("  experts Ψ' = %zu per rank: %d of the %d experts of each sparse layer, over the M = %d ranks "
                "holding the same (padded to %zu, shard %zu)\n",
                p.experts.numel, shape.moe.num_experts / ep, shape.moe.num_experts, M, experts.padded(),
                experts.shard_size());
  }
  if (shape.moe.enabled()) {  // every expert is held (and sharded); a token multiplies by top_k of them
    int sparse = 0;
    for (int l = 0; l < shape.n_layer; ++l) sparse += shape.sparse(l);
    std::printf("  active A = %zu per token (%d of %d experts in %d layers)\n", shape.active_params(),
                shape.moe.top_k, shape.moe.num_experts, sparse);
  }
  if (p.kept_fp32) {
    std::printf("  kept in fp32 F = %zu (data_types.keep_in_fp32_modules): a whole fp32 copy on every rank",
                p.kept_fp32);
    if (p.kept_fp32_trained == p.kept_fp32)
      std::printf(", and their fp32 gradients\n");
    else
      std::printf("; Fₜ = %zu of them train, their fp32 gradients on every rank\n", p.kept_fp32_trained);
  }
  if (p.unfrozen)
    std::printf("  trainable T = %zu (%.2f%%; padded to %zu, shard %zu): gradients and optimizer state for these "
                "alone\n",
                p.trainable, 100.0 * double(p.trainable) / double(p.padded), p.train_padded, p.train_shard);
  std::printf("  %-12s %12.2f MiB (%zu bytes)\n", "params", mib(p.params), p.params);
  std::printf("  %-12s %12.2f MiB (%zu bytes)\n", "grads", mib(p.grads), p.grads);
  std::printf("  %-12s %12.2f MiB (%zu bytes)\n", "optimizer", mib(p.optimizer), p.optimizer);
  if (p.offload)
    std::printf("  %-12s %12.2f MiB (%zu bytes: %zu in host memory, %zu in files)\n", "offload", mib(p.offload),
                p.offload, plan_offload_in_memory(p), p.offload_files);
  const size_t states = p.params + p.grads + p.optimizer + p.offload;
  std::printf("  %-12s %12.2f MiB   model states; formula %s\n", "total", mib(states), p.formula.c_str());
  if (p.unfrozen) {
    const EnginePlan& u = *p.unfrozen;
    const size_t all = u.params + u.grads + u.optimizer + u.offload;
    std::printf("  %-12s %12.2f MiB   model states if nothing were frozen (%s): freezing saves %.2f MiB\n", "",
                mib(all), u.formula.c_str(), mib(all - states));
  }
  std::string staging;
  if (p.host_buffers > p.checkpoint_staging)
    staging += fmt::format(", {:.2f} MiB of offload staging", mib(p.host_buffers - p.checkpoint_staging));
  if (p.checkpoint_staging) staging += fmt::format(", {:.2f} MiB of checkpoint staging", mib(p.checkpoint_staging));
  if (!staging.empty()) staging += " in host memory";
  std::printf("  %-12s <= %9.2f MiB   transient (buckets, gathered groups, fp32 views%s)\n", "buffers",
              mib(p.buffers_bound), staging.c_str());
  std::printf("  %-12s %12.2f MiB (%zu bytes)   micro-batch %lld x %lld tokens, %s%s\n", "activations",
              mib(p.activations), p.activations, (long long)c.micro_batch_rows(), (long long)c.data.seq_len,
              std::string(dtype_name(p.activation_dtype)).c_str(),
              c.recompute_activations() ? ", one block kept (activation checkpointing)" : "");
  const long long tokens = (long long)c.micro_batch_rows() * (long long)c.data.seq_len;
  const size_t logits = size_t(p.logit_rows) * size_t(c.model.shape.padded_vocab()) * dtype_size(p.activation_dtype);
  std::printf("  %-12s %12.2f MiB   of them the LM head's logits, %d rows at once; the head computes the rows whose "
              "target counts, at most %d of the %lld in a micro-batch%s\n",
              "", mib(logits), p.logit_rows, p.head_rows, tokens,
              p.head_rows < tokens ? " (the data's most)" : "");
  // The reference pass runs in the training buffers; a reference model's weights take the parameters' place.
  if (c.preference.enabled && c.preference.has_reference())
    std::printf("  %-12s %12.2f MiB   one forward pass before training%s, in the buffers above%s\n", "reference", 0.0,
                reference_pass_words(c.preference).c_str(),
                c.preference.reference == config::PreferenceReferenceSource::Model
                    ? " (its weights read into the parameters, the run's read back after)"
                    : "");
  if (gpu) {
    std::printf("  %-12s <= %9.2f MiB   everything above but offload, GPU memory (%s, %.2f GiB)\n", "per rank",
                mib(plan_device_total(p)), backend.device.name().c_str(), gib(backend.device.memory_bytes()));
    if (plan_total(p) > plan_device_total(p))
      std::printf("  %-12s <= %9.2f MiB   offload and staging, host memory\n", "",
                  mib(plan_total(p) - plan_device_total(p)));
  } else {
    std::printf("  %-12s <= %9.2f MiB   everything above%s, host memory\n", "per rank", mib(plan_total(p)),
                p.offload_files ? " but the files" : "");
  }
  if (p.offload_files) std::printf("  %-12s    %9.2f MiB   offload, files (nvme_path)\n", "", mib(p.offload_files));
  std::fflush(stdout);
  warn_if_too_big(p, local_ranks, backend.device);
}

}  // namespace zt
