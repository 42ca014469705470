// zero_optimization with its offload blocks: DeepSpeed's defaults, aliases, deprecated spellings,
// the ZeRO++/MiCS knobs that have no effect here, and the rules that tie keys to the stage.
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>

#include "config/blocks.hpp"

namespace zt::config {

namespace {

void require_writable_nvme_path(Block& b, const std::string& path) {
  if (path.empty()) b.fail("nvme_path", "missing (required when device is nvme)");
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec) || ::access(path.c_str(), W_OK) != 0)
    b.fail("nvme_path", fmt::format("\"{}\" is not a writable directory (expected a directory for offloaded state)",
                                    path));
}

// The keys both offload blocks start with: the device, its NVMe directory, pinned host memory, buffers.
template <class Offload>
void read_offload_target(Block& b, Offload& o) {
  o.device = b.choice("device", o.device, kOffloadDeviceNames);
  o.nvme_path = b.file_path("nvme_path", o.nvme_path);
  o.pin_memory = b.boolean("pin_memory", o.pin_memory);
  o.buffer_count = b.integer("buffer_count", o.buffer_count, IntRange::at_least(1));
}

OffloadOptimizerConfig read_offload_optimizer(Block& z, int stage) {
  Block b = z.child("offload_optimizer", UnknownKeys::Error);
  OffloadOptimizerConfig o;
  read_offload_target(b, o);
  o.fast_init = b.boolean("fast_init", o.fast_init);
  o.ratio = b.number("ratio", o.ratio, {0.0, 1.0, true, false});
  b.unimplemented("pipeline_read", false);
  b.unimplemented("pipeline_write", false);
  b.unimplemented("pipeline", false);
  b.finish();
  if (o.device != OffloadDevice::None && stage == 0)
    b.fail("device", fmt::format("\"{}\" needs ZeRO stage 1, 2 or 3 (stage is 0)", kOffloadDeviceNames.name(o.device)));
  if (o.device == OffloadDevice::Nvme) require_writable_nvme_path(b, o.nvme_path);
  if (o.ratio < 1.0 && stage != 3)
    b.fail("ratio", fmt::format("{} needs ZeRO stage 3 (partial optimizer offload; stage is {})", o.ratio, stage));
  return o;
}

OffloadParamConfig read_offload_param(Block& z, int stage) {
  Block b = z.child("offload_param", UnknownKeys::Error);
  OffloadParamConfig o;
  read_offload_target(b, o);
  o.buffer_size = b.integer("buffer_size", o.buffer_size, IntRange::at_least(1));
  o.max_in_cpu = b.integer("max_in_cpu", o.max_in_cpu, IntRange::at_least(0));
  b.finish();
  if (o.device != OffloadDevice::None && stage != 3)
    b.fail("device", fmt::format("\"{}\" needs ZeRO stage 3 (parameters are partitioned only there; stage is {})",
                                 kOffloadDeviceNames.name(o.device), stage));
  if (o.device == OffloadDevice::Nvme) require_writable_nvme_path(b, o.nvme_path);
  return o;
}

// Deprecated booleans that predate the offload blocks: cpu_offload, cpu_offload_param, cpu_offload_use_pin_memory.
void apply_deprecated_offload_flags(Block& z, ZeroConfig& c) {
  if (z.boolean("cpu_offload", false)) {
    z.warn("cpu_offload", "deprecated; read as offload_optimizer.device \"cpu\"");
    if (c.offload_optimizer.device != OffloadDevice::None && c.offload_optimizer.device != OffloadDevice::Cpu)
      z.fail("cpu_offload", fmt::format("true contradicts offload_optimizer.device \"{}\"",
                                         kOffloadDeviceNames.name(c.offload_optimizer.device)));
    c.offload_optimizer.device = OffloadDevice::Cpu;
  }
  if (z.boolean("cpu_offload_param", false)) {
    z.warn("cpu_offload_param", "deprecated; read as offload_param.device \"cpu\"");
    if (c.stage != 3) z.fail("cpu_offload_param", fmt::format("true needs ZeRO stage 3 (stage is {})", c.stage));
    if (c.offload_param.device != OffloadDevice::None && c.offload_param.device != OffloadDevice::Cpu)
      z.fail("cpu_offload_param", fmt::format("true contradicts offload_param.device \"{}\"",
                                               kOffloadDeviceNames.name(c.offload_param.device)));
    c.offload_param.device = OffloadDevice::Cpu;
  }
  if (z.present("cpu_offload_use_pin_memory")) {
    bool pin = z.boolean("cpu_offload_use_pin_memory", true);
    z.warn("cpu_offload_use_pin_memory", "deprecated; read as pin_memory of offload_optimizer and offload_param");
    c.offload_optimizer.pin_memory = c.offload_param.pin_memory = pin;
  } else {
    z.raw("cpu_offload_use_pin_memory");
  }
}

// Short aliases DeepSpeed accepts for the canonical stage3_* names.
void read_aliases(Block& z) {
  for (const char* name : {"prefetch_bucket_size", "param_persistence_threshold", "max_live_parameters",
                           "max_reuse_distance", "gather_16bit_weights_on_model_save", "model_persistence_threshold",
                           "module_granularity_threshold", "use_all_reduce_for_fetch_params"}) {
    const std::string canonical = std::string("stage3_") + name;
    z.rename(name, canonical, fmt::format("short alias of {0}; read as {0}", canonical));
  }
  z.rename("stage3_gather_fp16_weights_on_model_save", "stage3_gather_16bit_weights_on_model_save",
           "deprecated; read as stage3_gather_16bit_weights_on_model_save");
}

// Keys known to DeepSpeed with no effect here (ZeRO++, MiCS, legacy and tuning switches), each
// with the value that asks for nothing.
void read_unimplemented(Block& z) {
  z.unimplemented("allgather_partitions", true);
  z.unimplemented("use_multi_rank_bucket_allreduce", true);
  z.unimplemented("elastic_checkpoint", false);
  z.unimplemented("legacy_stage1", false);
  z.unimplemented("round_robin_gradients", false);
  z.unimplemented("zero_hpz_partition_size", 1);
  z.unimplemented("zero_quantized_weights", false);
  z.unimplemented("zero_quantized_nontrainable_weights", false);
  z.unimplemented("zero_quantized_gradients", false);
  z.unimplemented("memory_efficient_linear", true);
  z.unimplemented("pipeline_loading_checkpoint", false);
  z.unimplemented("override_module_apply", true);
  z.unimplemented("stage3_model_persistence_threshold", int64_t(9223372036854775807LL));
  z.unimplemented("stage3_module_granularity_threshold", 0);
  z.unimplemented("stage3_use_all_reduce_for_fetch_params", false);
  z.unimplemented("log_trace_cache_warnings", false);
  z.unimplemented("zenflow", nullptr);
}

}  // namespace

ZeroConfig read_zero(Block& top, const AutoValues& av) {
  // "zero_optimization": true is the old spelling of stage 1 (false: stage 0).
  nlohmann::json from_bool;
  const nlohmann::json* raw = top.raw("zero_optimization");
  if (raw && raw->is_boolean()) {
    from_bool = {{"stage", raw->get<bool>() ? 1 : 0}};
    raw = &from_bool;
  }
  Block z(top.diagnostics(), top.path_of("zero_optimization"), raw, UnknownKeys::Error);

  read_aliases(z);

  ZeroConfig c;
  c.stage = int(z.integer("stage", c.stage, IntRange::between(0, 3)));
  c.contiguous_gradients = z.boolean("contiguous_gradients", c.contiguous_gradients);
  c.reduce_scatter = z.boolean("reduce_scatter", c.reduce_scatter);
  c.reduce_bucket_size = z.integer("reduce_bucket_size", c.reduce_bucket_size, IntRange::at_least(1),
                                   av.reduce_bucket_size);
  c.allgather_bucket_size = z.integer("allgather_bucket_size", c.allgather_bucket_size, IntRange::at_least(1));
  c.overlap_comm = z.boolean("overlap_comm", c.stage == 3);
  c.load_from_fp32_weights = z.boolean("load_from_fp32_weights", c.load_from_fp32_weights);
  c.stage3_prefetch_bucket_size = z.integer("stage3_prefetch_bucket_size", c.stage3_prefetch_bucket_size,
                                            IntRange::at_least(0), av.stage3_prefetch_bucket_size);
  c.stage3_param_persistence_threshold =
      z.integer("stage3_param_persistence_threshold", c.stage3_param_persistence_threshold, IntRange::at_least(0),
                av.stage3_param_persistence_threshold);
  c.stage3_max_live_parameters =
      z.integer("stage3_max_live_parameters", c.stage3_max_live_parameters, IntRange::at_least(0));
  c.stage3_max_reuse_distance =
      z.integer("stage3_max_reuse_distance", c.stage3_max_reuse_distance, IntRange::at_least(0));
  c.stage3_gather_16bit_weights_on_model_save =
      z.boolean("stage3_gather_16bit_weights_on_model_save", c.stage3_gather_16bit_weights_on_model_save);
  c.ignore_unused_parameters = z.boolean("ignore_unused_parameters", c.ignore_unused_parameters);
  // Offloaded optimizer state is updated sub-group by sub-group; 0 (as some shipped configs write)
  // means one sub-group for the whole shard.
  c.sub_group_size = z.integer("sub_group_size", c.sub_group_size, IntRange::at_least(0));

  c.offload_optimizer = read_offload_optimizer(z, c.stage);
  c.offload_param = read_offload_param(z, c.stage);
  apply_deprecated_offload_flags(z, c);
  const bool sub_groups_used =
      c.offload_optimizer.device != OffloadDevice::None || c.offload_param.device == OffloadDevice::Nvme;
  if (c.sub_group_size != 1000000000 && c.sub_group_size != 0 && !sub_groups_used)
    z.warn("sub_group_size", fmt::format("{} has no effect without offload_optimizer or offload_param nvme (the "
                                         "optimizer state is updated as one piece); ignored", c.sub_group_size));
  if (c.offload_optimizer.device != OffloadDevice::None && c.stage == 0)
    z.fail("cpu_offload", "true needs ZeRO stage 1, 2 or 3 (stage is 0)");

  c.compute_grad_norm = z.boolean("compute_grad_norm", c.compute_grad_norm);
  if (!c.compute_grad_norm && c.stage != 1 && c.stage != 2)
    z.fail("compute_grad_norm", fmt::format("false needs ZeRO stage 1 or 2, as in DeepSpeed (stage is {})", c.stage));
  if (!c.compute_grad_norm && c.offload_optimizer.device != OffloadDevice::None)
    z.fail("compute_grad_norm",
           fmt::format("false cannot be used with offload_optimizer.device \"{}\", as in DeepSpeed",
                       kOffloadDeviceNames.name(c.offload_optimizer.device)));
  // Partitions are laid out by zerotrain's own alignment; any alignment DeepSpeed would use is accepted.
  z.integer("parameter_alignment", 1, IntRange::at_least(1));
  read_unimplemented(z);
  read_removed_zero_keys(z);
  z.finish();
  return c;
}

void apply_compute_grad_norm(Config& c, const ValueSources& sources, const Diagnostics& diag) {
  if (c.zero.compute_grad_norm || c.gradient_clipping == 0) return;
  for (const char* key : {"gradient_clipping", "training.max_grad_norm"})
    if (sources.given(key) && !sources.is_auto(key))
      diag.fail(key, fmt::format("{:g} asks for clipping, which needs the gradient norm that "
                                 "zero_optimization.compute_grad_norm false turns off (set it to 0)",
                                 c.gradient_clipping));
  c.gradient_clipping = 0;
}

}  // namespace zt::config
