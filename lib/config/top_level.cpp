// Top-level keys: batch sizes, clipping and the other scalars, and the keys DeepSpeed knows that
// zerotrain accepts without acting on them.
#include <climits>
#include <fmt/format.h>

#include "config/batch_size.hpp"
#include "config/blocks.hpp"
#include "model/gpt_layout.hpp"

namespace zt::config {

void read_top_level_scalars(Block& top, const AutoValues& av, Config& c) {
  // Micro-batch and accumulation are counts of sequences and steps held in an int.
  const IntRange count = IntRange::between(1, INT32_MAX);
  const auto mb = top.optional_integer("train_micro_batch_size_per_gpu", count, av.micro_batch_size);
  const auto ga = top.optional_integer("gradient_accumulation_steps", count, av.gradient_accumulation_steps);
  // "auto" train_batch_size: what the Trainer would pass, MB * GA * W with its own MB and GA (a
  // product beyond 64 bits is reported by derive_batch_sizes).
  const int64_t auto_tb = batch_product(mb.value_or(av.micro_batch_size), ga.value_or(av.gradient_accumulation_steps),
                                        int64_t(c.world_size))
                              .value_or(INT64_MAX);
  const auto tb = top.optional_integer("train_batch_size", IntRange::at_least(1), auto_tb);
  BatchSizes batch = derive_batch_sizes(tb, mb, ga, c.world_size, top.diagnostics());
  c.train_batch_size = batch.train_batch_size;
  c.train_micro_batch_size_per_gpu = batch.micro_batch_size;
  c.gradient_accumulation_steps = batch.accumulation_steps;

  // Left out, it is what "auto" gives (training.max_grad_norm, 1.0 by default), so that the training
  // key is never ignored; DeepSpeed's own default is 0 (no clipping).
  c.gradient_clipping = top.number("gradient_clipping", av.gradient_clipping, NumberRange::non_negative(),
                                   av.gradient_clipping);
  // DeepSpeed's null steps_per_print means "never print"; 0 says the same here.
  if (top.is_null("steps_per_print")) {
    top.raw("steps_per_print");
    c.steps_per_print = 0;
  } else {
    c.steps_per_print = top.integer("steps_per_print", c.steps_per_print, IntRange::at_least(0));
  }
  c.wall_clock_breakdown = top.boolean("wall_clock_breakdown", c.wall_clock_breakdown);
  c.prescale_gradients = top.boolean("prescale_gradients", c.prescale_gradients);
  c.gradient_predivide_factor =
      top.number("gradient_predivide_factor", c.gradient_predivide_factor, NumberRange::positive());
  c.zero_allow_untested_optimizer = top.boolean("zero_allow_untested_optimizer", c.zero_allow_untested_optimizer);
  c.zero_force_ds_cpu_optimizer = top.boolean("zero_force_ds_cpu_optimizer", c.zero_force_ds_cpu_optimizer);
  c.dump_state = top.boolean("dump_state", c.dump_state);
}

namespace {

}  // namespace

// data_types: the dtypes DeepSpeed may keep apart from the training dtype, and the parameters kept in
// fp32 under a 16-bit dtype. zerotrain accumulates gradients in the training dtype.
void read_data_types(Block& top, const ModelConfig& model, Config& c) {
  Block b = top.child("data_types", UnknownKeys::Warn);
  b.unimplemented("grad_accum_dtype", nullptr);
  b.unimplemented("param_dtype", nullptr);
  b.unimplemented("buffer_dtype", nullptr);
  if (b.is_auto("keep_in_fp32_modules")) {
    b.raw("keep_in_fp32_modules");
    c.keep_in_fp32_modules = fp32_module_patterns(model.shape);
  } else if (b.present("keep_in_fp32_modules") && !b.raw("keep_in_fp32_modules")->is_array()) {
    b.reject("keep_in_fp32_modules", fmt::format("{} is not a list (expected \"auto\" or a list of name patterns)",
                                                 show(*b.raw("keep_in_fp32_modules"))));
  } else {
    c.keep_in_fp32_modules = b.texts("keep_in_fp32_modules");
  }
  b.finish();
}

namespace {

// A block counts as "in use" when it is enabled; blocks without an "enabled" key when non-empty.
bool block_in_use(const nlohmann::json& v) {
  if (v.contains("enabled")) return v["enabled"] == true || v["enabled"] == "auto";
  return !v.empty();
}

}  // namespace

void read_ignored_top_level_keys(Block& top) {
  // DeepSpeed features outside ZeRO data parallelism: blocks, judged by block_in_use.
  static const char* const kBlocks[] = {
      "flops_profiler", "data_efficiency", "pipeline", "autotuning", "hybrid_engine", "compile",
      "tensor_parallel", "weight_quantization", "timers", "comet", "torch_autocast"};
  for (const char* key : kBlocks) {
    auto v = top.raw(key);
    if (!v) continue;
    if (!v->is_object())
      top.reject(key, fmt::format("{} is not an object (expected a JSON object {{...}})", show(*v)));
    else if (block_in_use(*v))
      top.warn(key, fmt::format("{} has no effect (not implemented in zerotrain); ignored", show(*v)));
  }
  // Scalar settings with their DeepSpeed defaults.
  top.unimplemented("memory_breakdown", false);
  top.unimplemented("disable_allgather", false);
  top.unimplemented("use_data_before_expert_parallelism", false);
  top.unimplemented("dataloader_drop_last", false);
  top.unimplemented("seq_parallel_communication_data_type", "fp32");
  top.unimplemented("sequence_parallel_size", 1);
  // Python's garbage collector during training: nothing to turn off in C++.
  top.boolean("disable_python_gc", false);
  read_removed_top_level_keys(top);
}

}  // namespace zt::config
